package tools_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// mailerGroups dead-letters 1000 messages of queue in 138 groups: ten of
// 40 messages, 88 of 5 and 40 of 4, all dead at once, so that many groups
// share their size and time.
func mailerGroups(t *testing.T, e *env, queue string) {
	t.Helper()
	var specs []pgtest.DeadSpec
	for i := range 138 {
		n := 4
		switch {
		case i < 10:
			n = 40
		case i < 98:
			n = 5
		}
		for range n {
			specs = append(specs, pgtest.DeadSpec{Kind: "mail", Class: "SMTPError", Message: "mailbox " + word(i) + " refused"})
		}
	}
	pgtest.DeadLetter(t, e.st, queue, specs...)
}

// Through the tool alone, an agent pages through a summary of more groups
// than one response holds: each page's note and next steps lead to the
// next page (the same filters with next_cursor as cursor), and the pages
// visit every group exactly once, their counts adding up to every dead
// message, whether the summary reads the maintained counts or the
// messages of a time window.
func TestDLQSummaryPages(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	mailerGroups(t, e, q)
	for _, args := range []map[string]any{{"queue": q}, {"queue": q, "since": "1h"}} {
		seen := map[string]bool{}
		var counted int64
		call := args
		for page := 0; ; page++ {
			if page > 138 {
				t.Fatalf("%v: paging does not end", args)
			}
			sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", call)
			if sum.TotalGroups != 138 || sum.Total+sum.MessagesOmitted != 1000 {
				t.Fatalf("%v, page %d: %d groups, total %d, omitted %d; want 138 groups and 1000 messages in all", args, page, sum.TotalGroups, sum.Total, sum.MessagesOmitted)
			}
			for _, g := range sum.Groups {
				if seen[g.DLQ+" "+g.Group] {
					t.Fatalf("%v, page %d lists group %s again", args, page, g.Group)
				}
				seen[g.DLQ+" "+g.Group] = true
				counted += g.Count
			}
			if sum.NextCursor == "" {
				if sum.Truncated {
					t.Fatalf("%v, page %d: truncated without a next cursor", args, page)
				}
				break
			}
			if page == 0 && !hasNoteWith(sum.Notes, "pass next_cursor as cursor with the same filters for the next page") {
				t.Errorf("%v: notes %q; want the way to the next page", args, sum.Notes)
			}
			next, ok := findHintWhy(sum.Next, "pgbus_dlq_summary", "next page")
			if !ok || hintArg(next, "cursor") != `"`+sum.NextCursor+`"` || hintArg(next, "queue") != `"`+q+`"` {
				t.Fatalf("%v, page %d: next %+v; want the next page of the same filters", args, page, sum.Next)
			}
			if _, ok := args["since"]; ok && hintArg(next, "since") != `"1h"` {
				t.Fatalf("%v, page %d: next page %+v drops the filter since", args, page, next)
			}
			call = next.Args
		}
		if len(seen) != 138 || counted != 1000 {
			t.Fatalf("%v: the pages visit %d groups of %d messages; want 138 of 1000", args, len(seen), counted)
		}
	}
}

// A summary cursor is refused, saying what to do, when the filters
// changed, when it is made up or changed, and when it is a list's; the
// next step named is the first page of the call's own filters.
func TestDLQSummaryCursorRefused(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	mailerGroups(t, e, q)
	first := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": q})
	list := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "limit": 1})
	if first.NextCursor == "" || list.NextCursor == "" {
		t.Fatalf("summary cursor %q, list cursor %q; want both", first.NextCursor, list.NextCursor)
	}
	other := map[string]any{"queue": q, "kind": "mail"}
	e.callErr(t, "pgbus_dlq_summary", with(other, "cursor", first.NextCursor),
		"cursor was issued for other filters; pass the same filters as the first page, or start again without cursor")
	for what, cursor := range map[string]string{"made up": "NQ", "changed": pgtest.TamperCursor(t, first.NextCursor), "of a list": list.NextCursor} {
		text := e.callErr(t, "pgbus_dlq_summary", with(other, "cursor", cursor), "cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor")
		if m := e.metaOf(t, "pgbus_dlq_summary", with(other, "cursor", cursor)); m.Kind != ops.KindInvalid || !hasCall(m.Next, "pgbus_dlq_summary", other) {
			t.Errorf("a cursor %s: %s, %+v; want kind invalid and the first page of %v next", what, text, m, other)
		}
	}
}
