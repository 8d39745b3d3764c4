package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// cutMidStatement runs op while another transaction holds the rows that
// lock (a SELECT ... FOR UPDATE) takes; once a statement of op waits for
// them (a COMMIT too, held by a deferred trigger: gateCommits), it lets
// that transaction go and at once cancels op's context, as the statement
// runs on, and returns what op returned. Whether the cancellation cuts
// such a statement off before its commit, or after it with its outcome
// unread, is a race: a few attempts see both.
func cutMidStatement[T any](t *testing.T, s *store.Store, lock string, op func(context.Context) (T, error)) (T, error) {
	t.Helper()
	return cutMidStatements(t, s, lock, 1, op)
}

// cutMidStatements is cutMidStatement once n statements wait for the rows
// locked: a call whose moves run side by side has them all under way.
func cutMidStatements[T any](t *testing.T, s *store.Store, lock string, n int, op func(context.Context) (T, error)) (T, error) {
	t.Helper()
	ctx := testContext(t)
	other, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx) //nolint:errcheck // committed below
	if tag, err := other.Exec(ctx, lock); err != nil || tag.RowsAffected() == 0 {
		t.Fatalf("%s: locked %d rows, %v", lock, tag.RowsAffected(), err)
	}
	opCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := op(opCtx)
		done <- result{v, err}
	}()
	holder := other.Conn().PgConn().PID()
	pgtest.Eventually(t, time.Minute, "statements to wait for the rows locked", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, holder) >= n
	})
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	r := <-done
	return r.v, r.err
}

// A discard by filter cancelled while a page's statement runs lets that
// statement finish, and counts what it moved: a report of none would hide
// messages that went to the archive.
func TestDiscardCancelledMidStatementCountsWhatMoved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		lock := `SELECT 1 FROM pgmq."q_` + dlq + `" FOR UPDATE`
		rep, err := cutMidStatement(t, s, lock, func(ctx context.Context) (store.DiscardReport, error) {
			return s.DiscardDeadSelected(ctx, store.DeadFilter{Queue: q}, 100, store.DiscardOptions{})
		})
		archived := pgtest.Archived(t, s, dlq)
		if err != nil && !errors.Is(err, context.Canceled) || archived != 5 || rep.Discarded != archived || len(rep.Moved) != archived {
			t.Fatalf("cancelled discard = %d discarded (%d listed), %v; %d archived; want the 5 under way moved and counted", rep.Discarded, len(rep.Moved), err, archived)
		}
	}
}

// A purge cancelled while a batch's statement runs lets that statement
// finish, and counts what it deleted.
func TestPurgeCancelledMidStatementCountsWhatWent(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		if n, err := s.DiscardDeadMatching(testContext(t), store.DeadFilter{Queue: q}, 100); err != nil || n != 5 {
			t.Fatalf("discard = %d, %v", n, err)
		}
		lock := `SELECT 1 FROM pgbus.failures WHERE queue_name = '` + dlq + `' FOR UPDATE`
		n, err := cutMidStatement(t, s, lock, func(ctx context.Context) (int64, error) {
			return s.PurgeDead(ctx, q, 0)
		})
		left := pgtest.Archived(t, s, dlq)
		if err != nil && !errors.Is(err, context.Canceled) || left != 0 || n != 5 {
			t.Fatalf("cancelled purge = %d purged, %v; %d left in the archive; want the 5 under way deleted and counted", n, err, left)
		}
	}
}

// gateCommits makes the commit of every transaction that inserts into
// table (a quoted table name) wait for a row of a table of its own, in a
// deferred constraint trigger, and returns the statement that locks that
// row: cutMidStatement then cancels a call as its transaction commits.
func gateCommits(t *testing.T, s *store.Store, table string) (lock string) {
	t.Helper()
	gate := `pgmq."` + uniqueName("gate") + `"`
	if _, err := s.Pool().Exec(testContext(t), `CREATE TABLE `+gate+` (n int); INSERT INTO `+gate+` VALUES (1);
		CREATE FUNCTION `+gate+`() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM 1 FROM `+gate+` FOR SHARE; RETURN NULL; END $$;
		CREATE CONSTRAINT TRIGGER gate AFTER INSERT ON `+table+` DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION `+gate+`()`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.Pool().Exec(context.Background(), `DROP TRIGGER IF EXISTS gate ON `+table+`; DROP FUNCTION IF EXISTS `+gate+`(); DROP TABLE `+gate)
	})
	return `SELECT 1 FROM ` + gate + ` FOR UPDATE`
}

// A discard guarded by its dry run's expect, cancelled as its transaction
// commits, lets the commit finish and reports the set moved: an error
// would call failed a discard whose messages all went to the archive.
func TestGuardedDiscardCancelledAsItCommitsCountsWhatMoved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		f := store.DeadFilter{Queue: q}
		dry, err := s.DiscardDeadSelected(testContext(t), f, 100, store.DiscardOptions{DryRun: true})
		if err != nil || dry.Discarded != 5 {
			t.Fatalf("dry run = %+v, %v", dry, err)
		}
		lock := gateCommits(t, s, `pgmq."a_`+dlq+`"`)
		rep, err := cutMidStatement(t, s, lock, func(ctx context.Context) (store.DiscardReport, error) {
			return s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{Expect: dry.Token})
		})
		archived, left := pgtest.Archived(t, s, dlq), pgtest.Live(t, s, dlq)
		if err != nil || archived != 5 || left != 0 || rep.Discarded != 5 || len(rep.Moved) != 5 {
			t.Fatalf("guarded discard cancelled as it commits = %d discarded (%d listed), %v; %d archived, %d left; want the 5 moved and reported", rep.Discarded, len(rep.Moved), err, archived, left)
		}
	}
}

// A retry guarded by its dry run's expect, cancelled as its transaction
// commits, lets the commit finish and reports the set moved.
func TestGuardedRetryCancelledAsItCommitsCountsWhatMoved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		f := store.DeadFilter{Queue: q}
		dry, err := s.RetryDeadMatching(testContext(t), f, 100, store.RetryOptions{DryRun: true})
		if err != nil || dry.Retried != 5 {
			t.Fatalf("dry run = %+v, %v", dry, err)
		}
		lock := gateCommits(t, s, `pgmq."q_`+q+`"`)
		rep, err := cutMidStatement(t, s, lock, func(ctx context.Context) (store.RetryReport, error) {
			return s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{Expect: dry.Token})
		})
		back, left := pgtest.Live(t, s, q), pgtest.Live(t, s, dlq)
		if err != nil || back != 5 || left != 0 || rep.Retried != 5 || len(rep.Moved) != 5 {
			t.Fatalf("guarded retry cancelled as it commits = %d retried (%d listed), %v; %d back in the queue, %d left; want the 5 moved and reported", rep.Retried, len(rep.Moved), err, back, left)
		}
	}
}

// A discard by ids cancelled while its statement runs lets it finish and
// counts what it moved: every id given was handled, so the call did not
// fail.
func TestDiscardByIDsCancelledMidStatementCountsWhatMoved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		ids := pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		lock := `SELECT 1 FROM pgmq."q_` + dlq + `" FOR UPDATE`
		n, err := cutMidStatement(t, s, lock, func(ctx context.Context) (int, error) {
			return s.DiscardDead(ctx, dlq, ids)
		})
		archived := pgtest.Archived(t, s, dlq)
		if err != nil || archived != 5 || n != 5 {
			t.Fatalf("discard by ids cancelled mid-statement = %d, %v; %d archived; want the 5 moved and counted", n, err, archived)
		}
	}
}

// A retry by ids cancelled while its moves run lets them finish and counts
// what moved, each message once, in its queue or its DLQ; when every id
// given moved, the call did not fail.
func TestRetryByIDsCancelledMidStatementCountsWhatMoved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		// Two: a retry moves at least two messages at once, so both are
		// under way when the call is cancelled.
		ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		lock := `SELECT 1 FROM pgmq."q_` + dlq + `" FOR UPDATE`
		rep, err := cutMidStatements(t, s, lock, 2, func(ctx context.Context) (store.RetryReport, error) {
			return s.RetryDead(ctx, dlq, ids, store.RetryOptions{})
		})
		back, left := pgtest.Live(t, s, q), pgtest.Live(t, s, dlq)
		if err != nil || back != 2 || left != 0 || rep.Retried != 2 || len(rep.Moved) != 2 || rep.Failed != 0 {
			t.Fatalf("retry by ids cancelled mid-statement = %d retried (%d listed), %d failed, %v; %d back in the queue, %d left; want the 2 moved and counted", rep.Retried, len(rep.Moved), rep.Failed, err, back, left)
		}
	}
}
