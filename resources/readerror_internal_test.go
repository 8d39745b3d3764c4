package resources

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// TestReadErrorHidesSecrets: the error of a resource read, whether the
// reader can fix it or not, quotes what a database or a downstream said
// with the secrets of the corpus hidden, as every other output does.
func TestReadErrorHidesSecrets(t *testing.T) {
	const uri = "pgbus://dlq/orders/42"
	for _, text := range secrettest.Texts(secrettest.Error) {
		for _, err := range []error{
			errors.New(text),
			&ops.Error{Msg: text, Err: ops.ErrInvalid},
			fmt.Errorf("%w: %s", ops.ErrNotFound, text),
		} {
			out := readError(context.Background(), uri, err).Error()
			if !strings.HasPrefix(out, "resource "+uri+": ") {
				t.Fatalf("readError(%v) = %q, want it to name the resource", err, out)
			}
			secrettest.AssertHidden(t, out)
		}
	}
}

// The error of a read the database could not serve names the next steps
// the operations layer gives it, the health check for a database that does
// not answer, rather than a step of its own.
func TestReadErrorNamesTheStepsItIsGiven(t *testing.T) {
	const uri = "pgbus://queues"
	if got, want := readErrorText(uri, ops.ErrUnavailable), "not a bad URI: check pgbus_health and try again later"; !strings.HasSuffix(got, want) {
		t.Errorf("readErrorText of a database unavailable = %q, want it to end %q", got, want)
	}
	if got, want := readErrorText(uri, errors.New("disk on fire")), "not a bad URI: try again later"; !strings.HasSuffix(got, want) {
		t.Errorf("readErrorText of an error with no next step = %q, want it to end %q", got, want)
	}
}

// A next step that is a resource reads as one ("; read pgbus://queues"),
// not as a thing to see ("see read pgbus://queues"); a tool's stays a call
// to see.
func TestReadErrorWordsResourceSteps(t *testing.T) {
	const uri = "pgbus://queues/orders/stats"
	list := ops.Hint{Op: ops.OpQueueStats}
	health := ops.Hint{Op: ops.OpHealth}
	for _, c := range []struct {
		hints []ops.Hint
		want  string
	}{
		{[]ops.Hint{list}, `queue "orders" does not exist; read pgbus://queues`},
		{[]ops.Hint{health}, `queue "orders" does not exist; see pgbus_health`},
		{[]ops.Hint{list, health}, `queue "orders" does not exist; read pgbus://queues or see pgbus_health`},
		{[]ops.Hint{health, list, health}, `queue "orders" does not exist; see pgbus_health or read pgbus://queues or see pgbus_health`},
		{[]ops.Hint{health, health}, `queue "orders" does not exist; see pgbus_health or pgbus_health`},
	} {
		err := &ops.Error{Msg: `queue "orders" does not exist`, Err: ops.ErrNotFound, Hints: c.hints}
		if got := readErrorText(uri, err); !strings.HasSuffix(got, c.want) {
			t.Errorf("readErrorText with hints %v = %q, want it to end %q", c.hints, got, c.want)
		}
	}
}
