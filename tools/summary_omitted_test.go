package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// word is a word of letters only, one for each i, so that errors that
// differ by it are groups of their own (numbers are one group).
func word(i int) string {
	return string(rune('a'+i/26%26)) + string(rune('a'+i%26)) + "x"
}

// A summary of more groups than one response holds says how many dead
// messages the groups left out hold, so that its counts add up to the
// DLQ's; and its next steps reach those groups: the next page, the
// summary of each DLQ holding some, when there are several, and the list
// of the messages one by one. It gives no advice to narrow by what every group shares.
func TestDLQSummarySaysWhatItLeftOut(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	// The small queue's groups are the oldest, so that the largest groups
	// of every DLQ leave them all out.
	small := newQueue(t, e.st)
	var specs []pgtest.DeadSpec
	for i := range 5 {
		specs = append(specs, pgtest.DeadSpec{Kind: "mail", Class: "SMTPError", Message: "mailbox " + word(100+i) + " refused"})
	}
	pgtest.DeadLetter(t, e.st, small, specs...)
	tpl := newQueue(t, e.st)
	specs = specs[:0]
	for i := range 80 {
		specs = append(specs, pgtest.DeadSpec{Kind: "render", Class: "TemplateError", Message: "template " + word(i) + " is missing"})
	}
	pgtest.DeadLetter(t, e.st, tpl, specs...)
	pgtest.DeadLetterN(t, e.st, tpl, 40, pgtest.DeadSpec{Kind: "render", Class: "TemplateError", Message: "renderer timed out"})

	one := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": tpl})
	if !one.Truncated || one.TotalGroups != 81 || one.Total+one.MessagesOmitted != 120 || one.MessagesOmitted == 0 {
		t.Fatalf("summary of %s: %d groups listed of %d, total %d, omitted %d; want the omitted to make up the 120", tpl,
			len(one.Groups), one.TotalGroups, one.Total, one.MessagesOmitted)
	}
	omitted := 81 - len(one.Groups)
	note := fmt.Sprintf("the other %d groups hold %d of the 120 dead messages", omitted, one.MessagesOmitted)
	if !hasNoteWith(one.Notes, note) || hasNoteWith(one.Notes, "narrow the filters (queue, kind, error_class)") {
		t.Errorf("notes %q: want %q, and no advice to narrow by what the groups share", one.Notes, note)
	}
	if !hasNoteWith(one.Notes, "pass next_cursor as cursor with the same filters for the next page") || one.NextCursor == "" {
		t.Errorf("notes %q, next cursor %q: want the way to the next page of groups", one.Notes, one.NextCursor)
	}
	list, ok := findHintWhy(one.Next, "pgbus_dlq_list", "left out")
	if !ok || hintArg(list, "queue") != `"`+tpl+`"` || hintArg(list, "group") != "" {
		t.Fatalf("next %+v: want the list of %s's dead messages, those left out among them", one.Next, tpl)
	}
	for _, h := range one.Next {
		if h.Op == "pgbus_dlq_summary" && hintArg(h, "cursor") == "" {
			t.Errorf("next %+v: a summary of one DLQ suggests %+v, which lists the same groups", one.Next, h)
		}
	}
	page := callOK[ops.DLQList](t, e, "pgbus_dlq_list", list.Args)
	if len(page.Items) == 0 {
		t.Errorf("the hinted list %v lists nothing", list.Args)
	}

	all := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{})
	if !all.Truncated || all.Total+all.MessagesOmitted != 125 {
		t.Fatalf("summary of all: total %d, omitted %d; want 125 in all", all.Total, all.MessagesOmitted)
	}
	for _, g := range all.Groups {
		if g.SourceQueue == small {
			t.Fatalf("the fixture lists a group of %s: %+v", small, g)
		}
	}
	var of *ops.Hint
	for _, h := range all.Next {
		if h.Op == "pgbus_dlq_summary" && strings.Trim(hintArg(h, "queue"), `"`) == small+"_dlq" {
			of = &h
		}
	}
	if of == nil {
		t.Fatalf("next %+v: want the summary of %s_dlq, whose groups were all left out", all.Next, small)
	}
	alone := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", of.Args)
	if alone.Truncated || alone.Total != 5 || len(alone.Groups) != 5 {
		t.Errorf("the hinted summary %v: %d groups, total %d, truncated %v; want the 5 of %s", of.Args, len(alone.Groups), alone.Total, alone.Truncated, small)
	}
}

// hasNoteWith reports whether a note contains s.
func hasNoteWith(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// findHintWhy returns the first hint that calls tool and whose why says
// why.
func findHintWhy(hints []ops.Hint, tool, why string) (ops.Hint, bool) {
	for _, h := range hints {
		if h.Op == tool && strings.Contains(h.Why, why) {
			return h, true
		}
	}
	return ops.Hint{}, false
}
