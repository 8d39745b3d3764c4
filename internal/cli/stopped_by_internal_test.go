package cli

import (
	"context"
	"errors"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A call cut by a signal's cancellation can fail with its connection
// closed (pgx closes it to cancel), not with the cancellation: such an
// error was said as a database that does not answer, though the person
// stopped the command. A signal's stop is now told as one whatever the
// database call's error; an error of another kind keeps its own words.
func TestSignalStopsAreToldAsSuch(t *testing.T) {
	t.Parallel()
	connClosed := &ops.Error{Msg: "the database does not answer", Err: errors.Join(ops.ErrUnavailable, errors.New("conn closed"))}
	notFound := &ops.Error{Msg: "queue \"x\" does not exist", Err: ops.ErrNotFound}
	stopped, stop := context.WithCancelCause(context.Background())
	stop(errStopped)
	plain, cancel := context.WithCancelCause(context.Background())
	cancel(nil)
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"the cancellation", stopped, context.Canceled, true},
		{"a connection the cancellation closed", stopped, connClosed, true},
		{"an error of its own", stopped, notFound, false},
		{"a connection closed without a signal", plain, connClosed, false},
	} {
		if got := stoppedBy(c.ctx, c.err); got != c.want {
			t.Errorf("%s: stopped by a signal %v; want %v", c.name, got, c.want)
		}
	}
}
