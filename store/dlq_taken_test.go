package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Messages a retry by filter selected and another call took before it
// could move them are counted as gone, not failed, however many (past the
// 100 a report lists), and give no first error.
func TestRetryMatchingCountsTakenMeanwhileAsGone(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 150, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	rep, err := pgtest.TakenMeanwhile(t, s, dlq, ids, func(ctx context.Context) (store.RetryReport, error) {
		return s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 1000, store.RetryOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Gone != 150 || rep.Failed != 0 || rep.Retried != 0 || rep.FirstError != "" {
		t.Fatalf("report = retried %d, gone %d, failed %d, first error %q; want the 150 taken meanwhile gone, none failed",
			rep.Retried, rep.Gone, rep.Failed, rep.FirstError)
	}
}

// deadInOwnDatabase dead-letters n messages of a new queue of a database
// of the test's own, and returns its store, queue, DLQ and DLQ ids.
func deadInOwnDatabase(t *testing.T, n int) (s *store.Store, q, dlq string, ids []int64) {
	t.Helper()
	s = testStore(t)
	q = newQueue(t, s)
	return s, q, store.DLQName(q), deadN(t, s, q, n, "k", "Timeout", store.ReasonMaxRetriesExceeded)
}

// Messages taken meanwhile do not count toward a bulk call's limit: it
// goes on to the next ones that match, as a call made after the other
// would have, so that of two racing calls each moves up to its limit.
func TestBulkLimitSkipsMessagesTakenMeanwhile(t *testing.T) {
	t.Parallel()
	// Each its own database: a call waiting for the rows holds its pool's
	// connections, which another's wait must not run short of.
	t.Run("retry", func(t *testing.T) {
		t.Parallel()
		s, q, dlq, ids := deadInOwnDatabase(t, 90)
		rep, err := pgtest.TakenMeanwhile(t, s, dlq, ids[:30], func(ctx context.Context) (store.RetryReport, error) {
			return s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 30, store.RetryOptions{})
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Retried != 30 || rep.Gone != 30 || rep.Failed != 0 || !rep.More {
			t.Fatalf("report = retried %d, gone %d, failed %d, more %v; want 30 retried past the 30 taken, and more left", rep.Retried, rep.Gone, rep.Failed, rep.More)
		}
		if got := dlqIDs(t, s, dlq); !slices.Equal(got, ids[60:]) {
			t.Fatalf("the DLQ holds %v, want the 30 newest, %v", got, ids[60:])
		}
	})
	t.Run("discard", func(t *testing.T) {
		t.Parallel()
		s, q, dlq, ids := deadInOwnDatabase(t, 60)
		rep, err := pgtest.TakenMeanwhile(t, s, dlq, ids[:40], func(ctx context.Context) (store.DiscardReport, error) {
			return s.DiscardDeadSelected(ctx, store.DeadFilter{Queue: q}, 40, store.DiscardOptions{})
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Discarded != 20 || rep.Gone != 40 || rep.More {
			t.Fatalf("report = discarded %d, gone %d, more %v; want the 20 left discarded past the 40 taken, none more", rep.Discarded, rep.Gone, rep.More)
		}
		if got := dlqIDs(t, s, dlq); len(got) != 0 {
			t.Fatalf("the DLQ still holds %v", got)
		}
	})
}
