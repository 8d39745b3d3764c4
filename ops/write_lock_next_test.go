package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A single write given up at its bound while it waited for a lock another
// session holds may or may not have been done, as its error says: its
// next steps hold the read that shows whether it was, the message for a
// retry of one id, the queue's stats for a pause, rather than nothing.
func TestSingleWriteHeldByALockGivesTheReadThatShowsIt(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, db)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: time.Second})
	// The locks are held through a store of their own, as another process
	// holds them.
	other := pgtest.OpenStore(t, db)
	ctx := testContext(t)

	has := func(what string, err error, op string, args map[string]any) {
		t.Helper()
		if err == nil || ops.ErrorKind(err) != ops.KindUnavailable || !strings.Contains(err.Error(), "for a lock another session holds") {
			t.Fatalf("%s held by a lock: %v; want it given up as unavailable, naming the lock", what, err)
		}
		next := ops.NextSteps(err)
		for _, h := range next {
			if h.Op != op {
				continue
			}
			same := len(h.Args) == len(args)
			for k, v := range args {
				same = same && h.Args[k] == v
			}
			if same {
				return
			}
		}
		t.Errorf("%s held by a lock: next %+v; want %s %v, which shows whether it was done", what, next, op, args)
	}

	lock := pgtest.HoldExclusiveLock(t, other, "q_"+store.DLQName(q))
	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
	has("a retry of one id", err, ops.OpDLQShow, map[string]any{"queue": q, "msg_id": ids[0]})
	lock.Release()

	tx, err := other.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `LOCK TABLE pgbus.queues IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_, err = svc.QueuePause(ctx, ops.QueueRequest{Queue: q})
	has("a pause", err, ops.OpQueueStats, map[string]any{"queue": q})
}
