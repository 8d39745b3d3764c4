package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A move by filter reports More only when the filter selects more messages
// than its limit, whether the limit ends within a page or at a page's end,
// and moves no more than the limit either way.
func TestMoveByFilterReportsMorePastTheLimit(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	pgtest.DeadLetterN(t, s, q, store.DeadBatch+1, pgtest.DeadSpec{})
	f := store.DeadFilter{Queue: q}
	for _, c := range []struct {
		limit int
		more  bool
	}{{1, true}, {store.DeadBatch, true}, {store.DeadBatch + 1, false}, {store.DeadBatch + 2, false}} {
		want := min(c.limit, store.DeadBatch+1)
		d, err := s.DiscardDeadSelected(ctx, f, c.limit, store.DiscardOptions{DryRun: true})
		if err != nil || d.Discarded != want || d.More != c.more {
			t.Errorf("discard dry run, limit %d: %d selected, more %v, %v; want %d and %v", c.limit, d.Discarded, d.More, err, want, c.more)
		}
		r, err := s.RetryDeadMatching(ctx, f, c.limit, store.RetryOptions{DryRun: true})
		if err != nil || r.Retried != want || r.More != c.more {
			t.Errorf("retry dry run, limit %d: %d selected, more %v, %v; want %d and %v", c.limit, r.Retried, r.More, err, want, c.more)
		}
	}
	rep, err := s.DiscardDeadSelected(ctx, f, store.DeadBatch, store.DiscardOptions{})
	if err != nil || rep.Discarded != store.DeadBatch || !rep.More {
		t.Fatalf("discard of a page of %d: %d, more %v, %v", store.DeadBatch+1, rep.Discarded, rep.More, err)
	}
	if n := pgtest.Live(t, s, store.DLQName(q)); n != 1 {
		t.Fatalf("the DLQ holds %d; want the 1 past the limit", n)
	}
}
