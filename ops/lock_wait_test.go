package ops_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	s, q, ids, svc := deadWithShortBound(t, 3)
	ctx := testContext(t)
	lock := pgtest.HoldLock(t, s, "q_"+q)
	pid := lock.PID
	end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid)
	held := fmt.Sprintf(`pgmq.q_%s in ShareLock by pid %d (idle in transaction`, q, pid)

	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1]})
	if err == nil || !strings.Contains(err.Error(), "waited 1s (database call timeout) for a lock another session holds") ||
		!strings.Contains(err.Error(), held) || !strings.Contains(err.Error(), end) || strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("a retry held by a lock: %v; want the lock, %q and %s, not a database that does not answer", err, held, end)
	}
	// Its one transaction may or may not have been done: the next step
	// shows the message, not the health check, which would say OK.
	if k, next := ops.ErrorKind(err), ops.NextSteps(err); k != ops.KindUnavailable || len(next) == 0 || next[0].Op != ops.OpDLQShow || next[0].Args["msg_id"] != ids[0] ||
		slices.ContainsFunc(next, func(h ops.Hint) bool { return h.Op == ops.OpHealth }) {
		t.Errorf("a retry held by a lock: kind %s, next %+v; want unavailable, the message shown first and no health check, which would say OK", k, next)
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
	// The sessions of the calls given up, whose connections were closed,
	// run their statements once the lock goes, until they find their
	// client gone: the retry after them would wait for their rows, within
	// its 1s bound, on a busy machine.
	pgtest.Eventually(t, time.Minute, "the given-up calls' sessions to end", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE '%_dlq%'`) == 0
	})
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
	s, q, _, svc := deadWithShortBound(t, 600)
	ctx := testContext(t)
	later := lockAfterFirstBatch(t, s, "q_"+q)
	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000, Progress: later.progress})
	lock := later.lock
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 || pd.Done >= 600 || lock == nil {
		t.Fatalf("a bulk retry held by a lock partway: %v; want it stopped partway", err)
	}
	end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID)
	if !strings.Contains(err.Error(), "for a lock another session holds") || !strings.Contains(err.Error(), end) {
		t.Fatalf("a bulk retry held by a lock partway: %v; want the lock and %s", err, end)
	}
	// The moves the bound cut while they waited are not known to be
	// undone (their connection was closed, not answered): the reads
	// that show them come first, then the same retry again.
	next := ops.NextSteps(err)
	if len(next) == 0 || next[len(next)-1].Op != ops.OpDLQRetry || len(pd.Unsure) == 0 && len(next) != 1 {
		t.Fatalf("next steps %+v (unsure %v); want the same retry again, after the reads of what may have moved when some may have", next, pd.Unsure)
	}
	lock.Release()
	if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000}); err != nil {
		t.Fatalf("the rest once the lock went: %v", err)
	}
	if live, dead := pgtest.Live(t, s, q), pgtest.Live(t, s, store.DLQName(q)); live != 600 || dead != 0 {
		t.Fatalf("after the retries: %d in the queue, %d dead; want the 600 in the queue once each", live, dead)
	}
}

// Discard, restore and purge held by a lock on the table they write say
// so, as a retry does, and lose nothing: what each call moved or deleted
// is whole, and once the lock goes the same calls finish the work. A bulk
// discard held partway stops there, with the same call as its next step.
func TestDiscardRestorePurgeHeldByALock(t *testing.T) {
	t.Parallel()
	s, q, ids, svc := deadWithShortBound(t, 600)
	ctx := testContext(t)
	dlq := store.DLQName(q)
	heldBy := func(what string, err error, lock *pgtest.HeldLock) {
		t.Helper()
		end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID)
		if err == nil || !strings.Contains(err.Error(), "for a lock another session holds") || !strings.Contains(err.Error(), end) ||
			strings.Contains(err.Error(), "did not answer") {
			t.Fatalf("%s held by a lock: %v; want the lock and %s, not a database that does not answer", what, err, end)
		}
		if k := ops.ErrorKind(err); k != ops.KindUnavailable {
			t.Errorf("%s held by a lock: kind %s; want unavailable", what, k)
		}
		for _, n := range ops.NextSteps(err) {
			if n.Op == ops.OpHealth {
				t.Errorf("%s held by a lock: next steps %+v hold the health check, which would say OK", what, ops.NextSteps(err))
			}
		}
	}
	counts := func(what string, dead, archived int) {
		t.Helper()
		if d, a := pgtest.Live(t, s, dlq), pgtest.Archived(t, s, dlq); d != dead || a != archived {
			t.Fatalf("%s: %d dead, %d discarded; want %d and %d", what, d, a, dead, archived)
		}
	}

	// A discard by ids writes the DLQ's archive: a lock on it holds the
	// call, which moves nothing.
	lock := pgtest.HoldLock(t, s, "a_"+dlq)
	_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids[:2], Filter: ops.DeadFilter{Queue: q}, Confirm: true})
	heldBy("a discard by ids", err, lock)
	lock.Release()
	counts("after the discard held by a lock", 600, 0)

	// A bulk discard held after its first batch stops there: its batches
	// done stay done, whole, and the same call finishes the rest.
	later := lockAfterFirstBatch(t, s, "a_"+dlq)
	req := ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000, Confirm: true, Progress: later.progress}
	_, err = svc.DLQDiscard(ctx, req)
	lock = later.lock
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 || pd.Done >= 600 || lock == nil {
		t.Fatalf("a bulk discard held by a lock partway: %v; want it stopped partway", err)
	}
	heldBy("a bulk discard partway", err, lock)
	if next := ops.NextSteps(err); len(next) == 0 || next[len(next)-1].Op != ops.OpDLQDiscard || len(pd.Unsure) == 0 && len(next) != 1 {
		t.Fatalf("a bulk discard held partway: next steps %+v (unsure %v); want the same discard again, after the reads of what may have moved when some may have", next, pd.Unsure)
	}
	counts("after the bulk discard held partway", 600-int(pd.Done), int(pd.Done))
	lock.Release()
	req.Progress = nil
	if _, err := svc.DLQDiscard(ctx, req); err != nil {
		t.Fatalf("the rest of the discard once the lock went: %v", err)
	}
	counts("after the discard", 0, 600)

	// A restore writes the DLQ's table.
	lock = pgtest.HoldLock(t, s, "q_"+dlq)
	_, err = svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: ids[:3]})
	heldBy("a restore", err, lock)
	lock.Release()
	counts("after the restore held by a lock", 0, 600)
	if _, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: ids[:3]}); err != nil {
		t.Fatalf("the restore once the lock went: %v", err)
	}
	counts("after the restore", 3, 597)

	// A purge deletes from the DLQ's archive.
	lock = pgtest.HoldLock(t, s, "a_"+dlq)
	_, err = svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, Confirm: true})
	heldBy("a purge", err, lock)
	lock.Release()
	counts("after the purge held by a lock", 3, 597)
	if _, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, Confirm: true}); err != nil {
		t.Fatalf("the purge once the lock went: %v", err)
	}
	counts("after the purge", 3, 0)
}

// deadWithShortBound returns a store on a database of its own, a queue
// with n dead messages and their ids, and a service whose calls give up
// after a second: the lock tests' setting.
func deadWithShortBound(t *testing.T, n int) (*store.Store, string, []int64, *ops.Service) {
	t.Helper()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, n, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	return s, q, ids, newService(t, s, ops.Options{DatabaseCallTimeout: time.Second})
}

// batchLock takes a lock on a table of pgmq once a bulk call reports its
// first batch done, before its next.
type batchLock struct {
	t     *testing.T
	s     *store.Store
	table string
	lock  *pgtest.HeldLock // nil until taken
}

func lockAfterFirstBatch(t *testing.T, s *store.Store, table string) *batchLock {
	return &batchLock{t: t, s: s, table: table}
}

// progress is the bulk call's Progress.
func (b *batchLock) progress(done, _ int) {
	if done > 0 && b.lock == nil {
		b.lock = pgtest.HoldLock(b.t, b.s, b.table)
	}
}

// A single-statement write given up at its bound while it waited for a
// lock (run-now's UPDATE) is not run later by the server once the lock
// goes: the message stays retrying, no backend is left waiting, and the
// same call then does it.
func TestSingleStatementGivenUpIsNotRunLater(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, s, nil)
	pgtest.Retrying(t, s, q)
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: time.Second})
	ctx := testContext(t)
	lock := pgtest.HoldLock(t, s, "q_"+q)
	_, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q})
	if err == nil || !strings.Contains(err.Error(), "for a lock another session holds") {
		t.Fatalf("run now held by a lock: %v; want it given up, naming the lock", err)
	}
	pgtest.Eventually(t, time.Minute, "no backend waiting for the lock", func() bool { return len(lock.Waiting()) == 0 })
	lock.Release()
	if dry, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, DryRun: true}); err != nil || dry.Visible != 1 {
		t.Fatalf("after the lock went, a dry run = %+v, %v; want the message still retrying", dry, err)
	}
	if out, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q}); err != nil || out.Visible != 1 {
		t.Fatalf("run now once the lock went = %+v, %v; want 1", out, err)
	}
}

// The health of a database where another session holds a queue's table
// in ACCESS EXCLUSIVE mode, which every read of it waits for, is DEGRADED
// with one reason naming that session, not UNREACHABLE: the database
// answers, and an agent told it did not would wait for an outage.
func TestHealthHeldByALockIsNoOutage(t *testing.T) {
	t.Parallel()
	s, q, _, svc := deadWithShortBound(t, 1)
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.q_`+q+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	h, err := svc.HealthOrUnreachable(ctx)
	if err != nil || h.Status != ops.HealthDegraded || len(h.Reasons) != 1 || h.Reasons[0].Code != "health_check_slow" ||
		!strings.Contains(h.Reasons[0].Message, "for a lock another session holds") || !strings.Contains(h.Reasons[0].Message, fmt.Sprintf("by pid %d", pid)) || !strings.Contains(h.Reasons[0].Message, fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid)) {
		t.Fatalf("health while pid %d holds the queue's table: %+v, %v; want DEGRADED, health_check_slow naming the session", pid, h, err)
	}
}

// A health check that waits for a connection while calls waiting for a
// lock another session holds on a queue's table take every one of the
// pool's is DEGRADED, its reason health_check_slow saying that the pool is
// busy and naming the session, not UNREACHABLE: the database answers a
// connection of its own at once, and an agent told it did not would wait
// for an outage while calls on other queues wait for a connection too.
func TestHealthWhileCallsWaitingForALockHoldThePool(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const poolSize = 2
	s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "pool_max_conns", fmt.Sprint(poolSize)))
	q := newQueue(t, s, nil)
	// whose reads wait for the lock their full bound, 30s, as writes do
	waiting := newService(t, s, ops.Options{ReadLockWait: -1})
	// The check gives up at its own bound (ops.HealthCheckTimeout, 5s),
	// and its question to a connection beside the pool gets as long: a
	// call timeout of 1s would give that question 1s, which a busy
	// machine's new connection can take, and the database would read as
	// one that does not answer.
	svc := newService(t, s, ops.Options{})
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q)
	// A read of the queue's messages, which waits for the lock as long
	// as its call may (the overview, bounded as the health check is,
	// would let its connection go as soon as the check gave up).
	lock.Occupy(poolSize, func(ctx context.Context) { _, _ = waiting.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q}) })

	h, err := svc.HealthOrUnreachable(testContext(t))
	if err != nil || h.Status != ops.HealthDegraded || len(h.Reasons) != 1 || h.Reasons[0].Code != "health_check_slow" ||
		!strings.Contains(h.Reasons[0].Message, fmt.Sprintf("all %d connections of this process's pool", poolSize)) ||
		!strings.Contains(h.Reasons[0].Message, fmt.Sprintf("by pid %d", lock.PID)) || !strings.Contains(h.Reasons[0].Message, fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID)) {
		t.Fatalf("health while calls waiting for pid %d's lock hold the pool: %+v, %v; want DEGRADED, health_check_slow naming the busy pool and the session", lock.PID, h, err)
	}
}

// A health check that waits for a connection while other calls hold every
// one of the pool's, none waiting for a lock, is DEGRADED too, saying so:
// a new connection is answered at once, so the database is no outage.
func TestHealthWhileOtherCallsHoldThePool(t *testing.T) {
	t.Parallel()
	const poolSize = 2
	s := pgtest.OpenStore(t, pgtest.WithParam(t, pgtest.NewDatabase(t), "pool_max_conns", fmt.Sprint(poolSize)))
	// The check's own bound, 5s, for the question beside the pool too
	// (as above).
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)
	for range poolSize {
		conn, err := s.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
	}
	h, err := svc.HealthOrUnreachable(ctx)
	if err != nil || h.Status != ops.HealthDegraded || len(h.Reasons) != 1 || h.Reasons[0].Code != "health_check_slow" ||
		!strings.Contains(h.Reasons[0].Message, fmt.Sprintf("all %d connections of this process's pool were in use", poolSize)) ||
		!strings.Contains(h.Reasons[0].Message, "a new connection is answered at once") {
		t.Fatalf("health while other calls hold the pool: %+v, %v; want DEGRADED, health_check_slow naming the busy pool", h, err)
	}
}
