package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A call its caller cancelled before it did anything (a client that went
// away, an interrupt) says so, in its error and its audit entry, rather
// than the driver's "store: ...: context canceled"; it is still a
// cancellation, of kind stopped.
func TestCancelledCallSaysSo(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{})
	ctx, cancel := context.WithCancel(ops.WithClient(testContext(t), client))
	cancel()
	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10})
	if !errors.Is(err, context.Canceled) || ops.ErrorKind(err) != ops.KindStopped ||
		!strings.HasPrefix(err.Error(), "stopped: the caller cancelled the call before it finished") {
		t.Fatalf("retry with a cancelled context = %v (kind %s); want a cancellation that says so", err, ops.ErrorKind(err))
	}
	if n := pgtest.Live(t, s, q+"_dlq"); n != 3 {
		t.Fatalf("%d dead messages left after the cancelled call, want 3", n)
	}
	m := partialAudit(t, auditRows(t, s, client), ops.OpDLQRetry)
	if msg, _ := m["error"].(string); !strings.HasPrefix(msg, "stopped: the caller cancelled the call") {
		t.Fatalf("audit entry %v; want its error to say the caller cancelled the call", m)
	}
}
