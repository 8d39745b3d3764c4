package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// checkCursorError asserts that a refused cursor is an invalid-request
// error that names the cursor in words, without a database error.
func checkCursorError(t *testing.T, what, cursor string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "cursor") || strings.Contains(err.Error(), "SQLSTATE") {
		t.Fatalf("%s cursor %q: error %v is not a clear refusal of the cursor", what, cursor, err)
	}
}

// FuzzCursor gives any text as the cursor of the paged lists (dead
// messages, live messages, the audit log): each is refused with a clear
// error or continues a list, and a dead-message page's next cursor leads
// on to the messages after it. Only the public decoding is tested, so
// the test holds whatever a cursor carries inside.
func FuzzCursor(f *testing.F) {
	st := testStore(f)
	ctx := testContext(f)
	q := newQueue(f, st)
	ids := pgtest.DeadLetterN(f, st, q, 5, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	filter := store.DeadFilter{Queue: q}
	// The pages of the DLQ, two messages each, hold every message once, and
	// their cursors are seeds.
	var seen []int64
	for cursor, pages := "", 0; pages == 0 || cursor != ""; pages++ {
		page, err := st.ListDead(ctx, filter, cursor, 2)
		if err != nil || pages > len(ids) {
			f.Fatalf("page %d after %q: %v", pages, cursor, err)
		}
		for _, it := range page.Items {
			seen = append(seen, it.MsgID)
		}
		cursor = page.NextCursor
		f.Add(cursor)
	}
	if slices.Sort(seen); !slices.Equal(seen, ids) {
		f.Fatalf("the pages hold %v, want %v", seen, ids)
	}
	for _, s := range []string{"garbage", "eyJ2IjoxfQ", "e30", strings.Repeat("A", 2000), "a\x00b", "\xff", "~", "====", "eyJ2IjoxLCJ0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJxIjoieF9kbHEiLCJpIjoxLCJmIjoiIiwiYyI6IiJ9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		page, err := st.ListDead(ctx, filter, cursor, 2)
		if err != nil {
			checkCursorError(t, "dead", cursor, err)
		} else {
			checkNextPage(t, st, filter, page)
		}
		if _, err := st.ListLive(ctx, store.LiveFilter{Queue: q}, cursor, 2); err != nil {
			checkCursorError(t, "live", cursor, err)
		}
		if _, err := st.ListAudit(ctx, store.AuditFilter{Client: q}, cursor, 2); err != nil {
			checkCursorError(t, "audit", cursor, err)
		}
	})
}

// checkNextPage asserts that the next cursor of a page is accepted and
// leads to messages after the page's, never the same ones.
func checkNextPage(t *testing.T, st *store.Store, filter store.DeadFilter, page store.DeadPage) {
	t.Helper()
	if page.NextCursor == "" {
		return
	}
	next, err := st.ListDead(pgtest.Context(t), filter, page.NextCursor, 2)
	if err != nil {
		t.Fatalf("next cursor %q is refused: %v", page.NextCursor, err)
	}
	for _, it := range next.Items {
		if slices.ContainsFunc(page.Items, func(p store.DeadItem) bool { return p.DLQ == it.DLQ && p.MsgID == it.MsgID }) {
			t.Fatalf("the next page repeats message %d of %s", it.MsgID, it.DLQ)
		}
	}
}
