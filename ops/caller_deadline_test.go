package ops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// A call whose caller's deadline passes is stopped by its caller, however
// the driver words it (a connection that timed out among them): not a
// database that does not answer, which would send whoever reads it to a
// health check that finds the database well.
func TestCallerDeadlineIsAStop(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	calls := map[string]func(context.Context) error{
		"queue stats": func(ctx context.Context) error { _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{}); return err },
		"dlq list":    func(ctx context.Context) error { _, err := svc.DLQList(ctx, ops.DLQListRequest{}); return err },
		"health":      func(ctx context.Context) error { _, err := svc.Health(ctx); return err },
	}
	failed := 0
	for name, call := range calls {
		for d := time.Duration(0); d <= 3*time.Millisecond; d += 100 * time.Microsecond {
			ctx, cancel := context.WithTimeout(testContext(t), d)
			err := call(ctx)
			cancel()
			if err == nil {
				continue
			}
			failed++
			if k := ops.ErrorKind(err); k != ops.KindStopped || errors.Is(err, ops.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s with a deadline of %s: kind %s, %v; want stopped, wrapping context.DeadlineExceeded", name, d, k, err)
			}
		}
	}
	if failed == 0 {
		t.Fatal("no call ran out of time; the test checked nothing")
	}
}
