package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A bulk operation over every DLQ pages through all that its filter
// selects, however the messages of the DLQs interleave in time: those of a
// DLQ that come after a full page of another's are in the next page, and
// the DLQs that hold none of them are left out of the pages once seen
// empty, without losing any.
func TestBulkPagesAcrossDLQs(t *testing.T) {
	t.Parallel()
	// A database of its own: the operation reads every DLQ, and other
	// tests drop theirs as they end.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	a, b, c := newQueue(t, s), newQueue(t, s), newQueue(t, s)
	pgtest.DeadLetterN(t, s, c, 700, pgtest.DeadSpec{Kind: "other", Message: "boom"})
	kind := uniqueName("kind")
	spec := pgtest.DeadSpec{Kind: kind, Message: "boom"}
	const page = 500 // the store's batch of a bulk operation
	pgtest.DeadLetterN(t, s, a, page, spec)
	pgtest.DeadLetterN(t, s, b, 3, spec)
	pgtest.DeadLetterN(t, s, a, 100, spec)
	pgtest.DeadLetterN(t, s, b, 2, pgtest.DeadSpec{Kind: "other", Message: "boom"})
	want := page + 3 + 100
	for _, f := range []store.DeadFilter{{Kind: kind}, {Kind: kind, ErrorClass: "E"}} {
		rep, err := s.RetryDeadMatching(ctx, f, 10_000, store.RetryOptions{DryRun: true})
		if err != nil || rep.Retried != want {
			t.Fatalf("dry run over every DLQ of %+v: %d would move (%v), want %d", f, rep.Retried, err, want)
		}
	}
	n, err := s.DiscardDeadMatching(ctx, store.DeadFilter{Kind: kind}, 10_000)
	if err != nil || n != want {
		t.Fatalf("discard over every DLQ: %d discarded (%v), want %d", n, err, want)
	}
	if left := pgtest.Live(t, s, store.DLQName(b)); left != 2 {
		t.Fatalf("%d left in %s, want the 2 of another kind", left, store.DLQName(b))
	}
}
