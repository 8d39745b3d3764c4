package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A summary of more groups than one holds is read in pages: each page
// after a cursor (DeadGroupCursor of the last group of the page before)
// holds the groups ranked after it, largest first, and the pages visit
// every group exactly once, the same groups in the same order whichever
// way the store reads them (the maintained counts, the group index, or
// the messages one by one), ties of size and time included.
func TestDeadGroupsPages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	const groups = store.MaxDeadGroups + 120
	// Classes 0..259 get three messages, the others two; many groups of
	// one size share their last time, so that only the key parts them.
	_, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+dlq+`" (vt, enqueued_at, message, headers)
		SELECT now(), now() - (g % 7) * interval '1 millisecond', '{}',
		       jsonb_build_object('pgbus_kind', 'k', 'pgbus_dead_letter', jsonb_build_object(
		           'reason', 'max_retries_exceeded', 'source_queue', $1::text, 'error_class', 'C' || (g % $2)))
		FROM generate_series(1, $2 * 2 + 260) g`, q, groups)
	if err != nil {
		t.Fatal(err)
	}
	const messages = groups*2 + 260
	ways := []struct {
		name string
		ctx  context.Context
		f    store.DeadFilter
	}{
		{"counts", ctx, store.DeadFilter{Queue: q}},
		{"index", func() context.Context { c, _ := store.ObserveSummaryScans(ctx, true); return c }(), store.DeadFilter{Queue: q, Since: epoch}},
		{"messages", store.ForceSummaryScan(ctx), store.DeadFilter{Queue: q, Since: epoch}},
	}
	var first []string
	for _, w := range ways {
		seen := map[string]bool{}
		var order []string
		var counted int64
		cursor := ""
		for page := 0; ; page++ {
			if page > groups {
				t.Fatalf("%s: paging does not end", w.name)
			}
			sum, err := s.SummarizeDeadWith(w.ctx, w.f, store.SummaryOptions{Cursor: cursor})
			if err != nil {
				t.Fatalf("%s: page %d: %v", w.name, page, err)
			}
			if sum.TotalGroups != groups || sum.TotalMessages != messages || sum.AfterGroups != groups-len(seen) {
				t.Fatalf("%s: page %d: %d groups, %d messages, %d after the cursor; want %d, %d, %d", w.name, page,
					sum.TotalGroups, sum.TotalMessages, sum.AfterGroups, groups, messages, groups-len(seen))
			}
			for i, g := range sum.Groups {
				if seen[g.Group] {
					t.Fatalf("%s: page %d lists group %s again", w.name, page, g.Group)
				}
				seen[g.Group], order, counted = true, append(order, g.Group), counted+g.Count
				if i > 0 && !ranksBefore(sum.Groups[i-1], g) {
					t.Fatalf("%s: page %d: group %d ranks before group %d:%s", w.name, page, i, i-1, dumpGroups(sum.Groups[i-1:i+1]))
				}
			}
			if !sum.Truncated {
				break
			}
			if len(sum.Groups) == 0 {
				t.Fatalf("%s: page %d is truncated and empty", w.name, page)
			}
			if cursor, err = s.DeadGroupCursor(w.ctx, w.f, sum.Groups[len(sum.Groups)-1]); err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) != groups || counted != messages {
			t.Fatalf("%s: pages visit %d groups of %d messages; want %d of %d", w.name, len(seen), counted, groups, messages)
		}
		if first == nil {
			first = order
		} else if !equalStrings(first, order) {
			t.Fatalf("%s: the pages list the groups in another order than %s", w.name, ways[0].name)
		}
	}
}

// ranksBefore reports whether a comes before b in a summary: larger,
// then newer, then by DLQ and key.
func ranksBefore(a, b store.DeadGroup) bool {
	switch {
	case a.Count != b.Count:
		return a.Count > b.Count
	case !a.LastDeadAt.Equal(b.LastDeadAt):
		return a.LastDeadAt.After(b.LastDeadAt)
	case a.DLQ != b.DLQ:
		return a.DLQ < b.DLQ
	}
	return a.Group < b.Group
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A summary cursor is refused with other filters, made up, changed, or
// from a list of messages; a list refuses a summary's.
func TestDeadGroupCursorRefused(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+dlq+`" (vt, message, headers)
		SELECT now(), '{}', jsonb_build_object('pgbus_kind', 'k', 'pgbus_dead_letter', jsonb_build_object(
		           'reason', 'max_retries_exceeded', 'source_queue', $1::text, 'error_class', 'C' || g))
		FROM generate_series(1, 3) g`, q); err != nil {
		t.Fatal(err)
	}
	f := store.DeadFilter{Queue: q}
	sum, err := s.SummarizeDeadWith(ctx, f, store.SummaryOptions{})
	if err != nil || len(sum.Groups) != 3 {
		t.Fatalf("summary: %+v, %v", sum, err)
	}
	cursor, err := s.DeadGroupCursor(ctx, f, sum.Groups[0])
	if err != nil {
		t.Fatal(err)
	}
	if next, err := s.SummarizeDeadWith(ctx, f, store.SummaryOptions{Cursor: cursor}); err != nil || len(next.Groups) != 2 || next.Groups[0].Group != sum.Groups[1].Group {
		t.Fatalf("the page after the first group: %+v, %v; want the other two", next.Groups, err)
	}
	page, err := s.ListDead(ctx, f, "", 1)
	if err != nil || page.NextCursor == "" {
		t.Fatalf("list: %+v, %v", page, err)
	}
	for what, c := range map[string]string{"made up": "NQ", "of a list": page.NextCursor, "changed": pgtest.TamperCursor(t, cursor)} {
		if _, err := s.SummarizeDeadWith(ctx, f, store.SummaryOptions{Cursor: c}); !errors.Is(err, store.ErrInvalid) || err.Error() != "cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor" {
			t.Errorf("a cursor %s: %v; want it refused as not valid", what, err)
		}
	}
	if _, err := s.SummarizeDeadWith(ctx, store.DeadFilter{Queue: q, Kind: "k"}, store.SummaryOptions{Cursor: cursor}); !errors.Is(err, store.ErrInvalid) ||
		err.Error() != "cursor was issued for other filters; pass the same filters as the first page, or start again without cursor" {
		t.Errorf("a cursor of other filters: %v; want it refused", err)
	}
	if _, err := s.ListDead(ctx, f, cursor, 1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a list given a summary's cursor: %v; want it refused", err)
	}
}
