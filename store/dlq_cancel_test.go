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
// lock (a SELECT ... FOR UPDATE) takes; once a statement of op naming dlq
// waits for them, it lets that transaction go and at once cancels op's
// context, as the statement runs on, and returns what op returned.
// Whether the cancellation cuts such a statement off before its commit,
// or after it with its outcome unread, is a race: a few attempts see both.
func cutMidStatement[T any](t *testing.T, s *store.Store, lock, dlq string, op func(context.Context) (T, error)) (T, error) {
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
	pgtest.Eventually(t, time.Minute, "a statement on "+dlq+" to wait for the rows locked", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'`, dlq) > 0
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
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		lock := `SELECT 1 FROM pgmq."q_` + dlq + `" FOR UPDATE`
		rep, err := cutMidStatement(t, s, lock, dlq, func(ctx context.Context) (store.DiscardReport, error) {
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
	s := testStore(t)
	for range 3 {
		q := newQueue(t, s)
		pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{})
		dlq := store.DLQName(q)
		if n, err := s.DiscardDeadMatching(testContext(t), store.DeadFilter{Queue: q}, 100); err != nil || n != 5 {
			t.Fatalf("discard = %d, %v", n, err)
		}
		lock := `SELECT 1 FROM pgbus.failures WHERE queue_name = '` + dlq + `' FOR UPDATE`
		n, err := cutMidStatement(t, s, lock, dlq, func(ctx context.Context) (int64, error) {
			return s.PurgeDead(ctx, q, 0)
		})
		left := pgtest.Archived(t, s, dlq)
		if err != nil && !errors.Is(err, context.Canceled) || left != 0 || n != 5 {
			t.Fatalf("cancelled purge = %d purged, %v; %d left in the archive; want the 5 under way deleted and counted", n, err, left)
		}
	}
}
