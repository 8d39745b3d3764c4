package ops_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A page of discarded messages fits the response bound with its next
// steps counted: the restore hint names the ids of the rows listed, which
// a page cut to the bound by its rows alone passed.
func TestDiscardedPageFitsWithItsHints(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	const bound = 4000
	svc := newService(t, s, ops.Options{Bounds: ops.Bounds{Response: bound}})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 40, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: strings.Repeat("upstream timed out; ", 3)})
	if d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, IDs: ids}); err != nil || d.Discarded != len(ids) {
		t.Fatalf("discard = %+v, %v", d, err)
	}
	page, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 40})
	if err != nil || len(page.Items) == 0 || len(page.Items) == 40 || page.NextCursor == "" {
		t.Fatalf("page = %d items, next %q, %v; want it cut to the bound, with a next page", len(page.Items), page.NextCursor, err)
	}
	b, err := json.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCount(b); n > bound {
		t.Errorf("the page of %d rows is %d characters, over the bound of %d", len(page.Items), n, bound)
	}
}
