package ops_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// toolWords are the words of one front end (the MCP tools' arguments and
// names), which the notes every front end shows must not use.
var toolWords = []string{"include_payload", "full_history", "pass tool", "next_cursor as cursor", "pgbus_"}

// A note that says how to see what a result left out carries that as an
// Ask, for each front end to word, and names no front end's argument.
func TestAsksAreData(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	svc := newService(t, st, ops.Options{AllowPayloads: true})
	ctx := testContext(t)
	q := newQueue(t, st, nil)
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "mail", Message: "m"})

	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	checkAsk(t, "DLQShow", m.Notes, m.Asks, ops.AskPayload)
	l, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	checkAsk(t, "QueueMessages", l.Notes, l.Asks, ops.AskPayload)
	a, err := svc.Audit(ctx, ops.AuditRequest{})
	if err != nil {
		t.Fatal(err)
	}
	checkAsk(t, "Audit", a.Notes, a.Asks, ops.AskSends)

	worded := ops.WordAsks(m.Notes, m.Asks, func(ops.Ask, string) string { return "" })
	if len(worded) != len(m.Notes)-1 || slices.Contains(worded, m.Notes[m.Asks[0].Note]) {
		t.Errorf("WordAsks with the ask worded \"\" = %q, want %q without its note", worded, m.Notes)
	}
}

// checkAsk fails unless notes hold a note with an ask of kind, and none
// uses a tool's words.
func checkAsk(t *testing.T, op string, notes []string, asks []ops.Ask, kind ops.AskKind) {
	t.Helper()
	i := slices.IndexFunc(asks, func(a ops.Ask) bool { return a.Kind == kind })
	if i < 0 || asks[i].Note < 0 || asks[i].Note >= len(notes) {
		t.Errorf("%s: asks %+v, notes %q; want an ask of %s for one of the notes", op, asks, notes, kind)
	}
	for _, n := range notes {
		for _, w := range toolWords {
			if strings.Contains(n, w) {
				t.Errorf("%s: note %q names %q, a tool's word", op, n, w)
			}
		}
	}
}

// WordNotes words every result whose notes ask for more, once: a second
// call finds the asks spent and changes nothing; other values are left
// alone.
func TestWordNotesWordsOnce(t *testing.T) {
	t.Parallel()
	word := func(a ops.Ask, note string) string { return note + " [worded]" }
	results := []any{
		&ops.DeadMessage{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskPayload}}},
		&ops.LiveMessages{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskNextPage}}},
		&ops.DLQList{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskNextPage}}},
		&ops.AuditPage{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskSends}}},
		&ops.QueueStatsResult{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskOneQueue}}},
		&ops.Health{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskAll}}},
		&ops.Workers{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskAll}}},
		&ops.Circuits{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskMore}}},
		&ops.DLQRetry{Notes: []string{"n"}, Asks: []ops.Ask{{Kind: ops.AskSameDryRun}}},
	}
	for _, r := range results {
		ops.WordNotes(r, word)
		ops.WordNotes(r, word)
		if notes := reflect.ValueOf(r).Elem().FieldByName("Notes").Interface().([]string); !slices.Equal(notes, []string{"n [worded]"}) {
			t.Errorf("%T: notes %q, want the one note worded once", r, notes)
		}
	}
	other := ops.DLQSummary{Notes: []string{"n"}}
	ops.WordNotes(&other, word)
	if !slices.Equal(other.Notes, []string{"n"}) {
		t.Errorf("a result without asks was worded: %q", other.Notes)
	}
}
