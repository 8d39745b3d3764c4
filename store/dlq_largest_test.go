package store_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A list of the largest payloads first pages through every DLQ, more
// than one statement's chunk of them, in (payload size, dead-letter time,
// DLQ, id) order, each message once, ties of size and time included; a
// minimum size selects only the messages at least that large, and a
// cursor of that order is refused by a list of the newest first.
func TestListDeadLargestFirst(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	sizes := []int{10, 3000, 500, 3000, 2000, 10}
	for i := range 18 {
		q := newQueue(t, s)
		var specs []pgtest.DeadSpec
		for j := range 1 + i%3 {
			n := sizes[(i+j)%len(sizes)]
			specs = append(specs, pgtest.DeadSpec{Payload: fmt.Sprintf(`{"p": %q}`, strings.Repeat("x", n))})
		}
		pgtest.DeadLetter(t, s, q, specs...)
	}
	var all []store.DeadItem
	for cursor := ""; ; {
		page, err := s.ListDead(ctx, store.DeadFilter{}, cursor, store.MaxDeadPage)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	slices.SortFunc(all, func(a, b store.DeadItem) int {
		return cmp.Or(cmp.Compare(b.PayloadBytes, a.PayloadBytes), b.DeadLetteredAt.Compare(a.DeadLetteredAt), strings.Compare(b.DLQ, a.DLQ), cmp.Compare(b.MsgID, a.MsgID))
	})
	key := func(it store.DeadItem) string { return fmt.Sprintf("%s/%d:%d", it.DLQ, it.MsgID, it.PayloadBytes) }
	for _, min := range []int64{0, 2000} {
		var want []string
		for _, it := range all {
			if it.PayloadBytes >= min {
				want = append(want, key(it))
			}
		}
		var got []string
		var largestCursor string
		for cursor := ""; ; {
			page, err := s.ListDeadOrdered(ctx, store.DeadFilter{MinPayloadBytes: min}, store.DeadLargest, cursor, 4)
			if err != nil {
				t.Fatalf("min %d: %v", min, err)
			}
			for _, it := range page.Items {
				got = append(got, key(it))
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
			largestCursor = cursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("min %d: largest first listed\n%v\nwant\n%v", min, got, want)
		}
		if _, err := s.ListDead(ctx, store.DeadFilter{MinPayloadBytes: min}, largestCursor, 4); err == nil || !strings.Contains(err.Error(), "other filters") {
			t.Errorf("min %d: a cursor of the largest first, given to a list of the newest first: %v; want it refused", min, err)
		}
	}
	if _, err := s.ListDead(ctx, store.DeadFilter{MinPayloadBytes: -1}, "", 4); err == nil {
		t.Error("a negative minimum size was taken")
	}
}
