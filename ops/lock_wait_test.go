package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A call given up at its bound while it waited for a lock another session
// holds on the queue's table (a LOCK TABLE, a VACUUM FULL, a transaction
// left open) says so, with the session and the statement that ends it,
// rather than that the database does not answer, which the health check
// would contradict; a retry of several messages stops at the first, rather
// than wait a bound for each. Nothing is lost: once the lock goes, a retry
// moves every message.
func TestCallWaitingForALockSaysWhoHoldsIt(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: time.Second})
	lock := pgtest.HoldLock(t, s, "q_"+q)
	pid := lock.PID
	end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid)
	held := fmt.Sprintf(`pgmq.q_%s in ShareLock by pid %d (idle in transaction`, q, pid)

	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1]})
	if err == nil || !strings.Contains(err.Error(), "waited 1s (database call timeout) for a lock another session holds") ||
		!strings.Contains(err.Error(), held) || !strings.Contains(err.Error(), end) || strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("a retry held by a lock: %v; want the lock, %q and %s, not a database that does not answer", err, held, end)
	}
	if k, next := ops.ErrorKind(err), ops.NextSteps(err); k != ops.KindUnavailable || len(next) != 0 {
		t.Errorf("a retry held by a lock: kind %s, next %+v; want unavailable and no health check, which would say OK", k, next)
	}
	// A retry of several messages stops at the first move given up, each
	// other one being held alike, and says why, by filter or by ids.
	for name, req := range map[string]ops.DLQRetryRequest{"by filter": {Filter: ops.DeadFilter{Queue: q}}, "by ids": {IDs: ids}} {
		_, err = svc.DLQRetry(ctx, req)
		if err == nil || !strings.Contains(err.Error(), held) || !strings.Contains(err.Error(), end) {
			t.Fatalf("a retry %s held by a lock: %v; want the lock, %q and %s", name, err, held, end)
		}
	}

	lock.Release()
	if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}}); err != nil {
		t.Fatalf("the bulk retry once the lock went: %v", err)
	}
	if live, dead := pgtest.Live(t, s, q), pgtest.Live(t, s, store.DLQName(q)); live != 3 || dead != 0 {
		t.Fatalf("after the retries: %d in the queue, %d dead; want the 3 messages in the queue once each", live, dead)
	}
}

// A bulk retry held by a lock partway stops there: it says what it moved,
// the lock and how to end it, and gives the same call again as its next
// step, not the health check, which would say the database answers.
func TestBulkRetryHeldByALockPartway(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 600, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: time.Second})
	var lock *pgtest.HeldLock
	req := ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000, Progress: func(done, _ int) {
		if done > 0 && lock == nil {
			lock = pgtest.HoldLock(t, s, "q_"+q) // after the first batch, before the next
		}
	}}
	_, err := svc.DLQRetry(ctx, req)
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 || pd.Done >= 600 || lock == nil {
		t.Fatalf("a bulk retry held by a lock partway: %v; want it stopped partway", err)
	}
	end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID)
	if !strings.Contains(err.Error(), "for a lock another session holds") || !strings.Contains(err.Error(), end) {
		t.Fatalf("a bulk retry held by a lock partway: %v; want the lock and %s", err, end)
	}
	next := ops.NextSteps(err)
	if len(next) != 1 || next[0].Op != ops.OpDLQRetry {
		t.Fatalf("next steps %+v; want the same retry again only", next)
	}
	lock.Release()
	if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000}); err != nil {
		t.Fatalf("the rest once the lock went: %v", err)
	}
	if live, dead := pgtest.Live(t, s, q), pgtest.Live(t, s, store.DLQName(q)); live != 600 || dead != 0 {
		t.Fatalf("after the retries: %d in the queue, %d dead; want the 600 in the queue once each", live, dead)
	}
}
