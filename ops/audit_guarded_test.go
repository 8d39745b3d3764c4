package ops_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A retry or discard guarded by its dry run's expect moves its messages in
// one transaction: killed before it commits, it moved nothing. It writes
// no entry before its work, which would read as not finished with counts
// that may be partial; its one entry, written at its end, has its
// outcome, as a call by ids has.
func TestAuditGuardedWriteLeavesNothingUnfinished(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k", Class: "Down"})
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)

	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil || dry.Expect == "" {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	// A message of the set is locked: the guarded retry waits on it, its
	// transaction open, as a process killed there would leave it.
	release, done := retryBehindALock(ctx, t, s, svc, q, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Expect: dry.Expect})
	pgtest.Eventually(t, time.Minute, "the guarded retry waiting on the locked message", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	})
	page, err := svc.Audit(ctx, ops.AuditRequest{Client: client, Op: ops.OpDLQRetry})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Items {
		if e.Unfinished {
			t.Errorf("the guarded retry, in its one transaction, shows as not finished: entry %d, %s", e.ID, e.Result)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.out.Retried != 3 {
		t.Fatalf("guarded retry: %+v, %v", r.out, r.err)
	}

	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k", Class: "Down"})
	dd, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil || dd.Expect == "" {
		t.Fatalf("dry run of the discard: %+v, %v", dd, err)
	}
	if out, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Expect: dd.Expect, Confirm: true}); err != nil || out.Discarded != 2 {
		t.Fatalf("guarded discard: %+v, %v", out, err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log WHERE client = $1 AND pending`, client); n != 0 {
		t.Errorf("%d entries written before the guarded writes' work, want none", n)
	}
	page, err = svc.Audit(ctx, ops.AuditRequest{Client: client, Op: ops.AuditAll})
	if err != nil {
		t.Fatal(err)
	}
	var writes int
	for _, e := range page.Items {
		if e.Unfinished || e.IsError {
			t.Errorf("entry %d of %s: %s, want finished and done", e.ID, e.Op, e.Result)
		}
		if e.Op == ops.OpDLQRetry || e.Op == ops.OpDLQDiscard {
			writes++
		}
	}
	if writes != 4 { // two dry runs, two guarded writes
		t.Errorf("%d entries of retries and discards, want 4: %+v", writes, page.Items)
	}
}
