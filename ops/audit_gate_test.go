package ops_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// lockedBuffer is a buffer safe for the service's writes and the test's
// reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A write refused while the process readies its database at start (the
// gate) is recorded as one refused during an outage after start is: held
// in memory, and written, in order and with its refusal, once the gate
// opens. A request refused for its arguments is not recorded, as always.
// A process that stops before the gate opens gives the held entries to
// its log as unrecorded, as at the end of an outage.
func TestAuditGateRefusalsAreHeldUntilTheDatabaseIsReady(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	g := ops.NewGate()
	svc := newService(t, s, ops.Options{Gate: g})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)

	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); !errors.Is(err, ops.ErrNotReady) {
		t.Fatalf("pause while the gate holds: %v, want ErrNotReady", err)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: ""}); !errors.Is(err, ops.ErrNotReady) {
		t.Fatalf("pause without a queue while the gate holds: %v, want ErrNotReady", err)
	}
	if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{42}, Filter: ops.DeadFilter{Queue: q}}); !errors.Is(err, ops.ErrNotReady) {
		t.Fatalf("retry while the gate holds: %v, want ErrNotReady", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log WHERE client = $1`, client); n != 0 {
		t.Fatalf("%d audit entries written while the gate holds, want none until it opens", n)
	}
	g.Open()
	pgtest.Eventually(t, time.Minute, "the held entries to be written", func() bool {
		return len(auditRows(t, s, client)) == 2
	})
	rows := auditRows(t, s, client)
	if rows[0].Tool != ops.OpQueuePause || rows[1].Tool != ops.OpDLQRetry || !rows[0].IsError || !rows[1].IsError ||
		!strings.Contains(rows[0].Result, "does not answer yet") || !strings.Contains(rows[0].Arguments, q) || !strings.Contains(rows[1].Arguments, "42") {
		t.Fatalf("entries of the refused writes: %+v", rows)
	}

	// Stopped before the gate opens: unrecorded, in the log.
	var log lockedBuffer
	g2 := ops.NewGate()
	svc2 := newService(t, s, ops.Options{Gate: g2, Unrecorded: &log})
	if _, err := svc2.QueueResume(ctx, ops.QueueRequest{Queue: q}); !errors.Is(err, ops.ErrNotReady) {
		t.Fatalf("resume while the gate holds: %v, want ErrNotReady", err)
	}
	svc2.Close(ctx)
	if got := log.String(); !strings.Contains(got, `"tool":"queue_resume"`) || !strings.Contains(got, "could not record this operation") || !strings.Contains(got, "does not answer yet") {
		t.Fatalf("unrecorded line of a refusal held when the process stopped: %q", got)
	}
}
