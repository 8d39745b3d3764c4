package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// resultFields are fields of the JSON contract that a person reading a
// table or a page never sees: a note every front end shows names what
// its reader sees instead (a preview, a failure count).
var resultFields = []string{"payload_preview", "failure_count"}

// The notes of a shortened payload and of failures left out say so in
// words every front end shows, not by the JSON fields that hold them.
func TestNotesNameNoResultField(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	q := newQueue(t, s, nil)
	keys := map[string]int{}
	for i := range 3000 {
		keys[fmt.Sprintf("key_%04d", i)] = i
	}
	long := mustJSON(t, map[string]any{"blob": strings.Repeat("x", 20<<10), "order_id": 42})
	var notes []string
	for _, payload := range []string{long, mustJSON(t, keys)} {
		ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Payload: payload})
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
		if err != nil {
			t.Fatal(err)
		}
		if !m.PayloadTruncated {
			t.Fatalf("a payload of %d bytes shows whole; want it shortened", len(payload))
		}
		notes = append(notes, m.Notes...)
	}

	ids, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(long)}})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= ops.DefaultBounds.LiveHistory+2; attempt++ {
		f := store.Failure{Attempt: attempt, Kind: "k", ErrorClass: "E", ErrorMessage: fmt.Sprintf("failure %d", attempt)}
		if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[0], Failure: f}}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: true})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNoteWith(l.Notes, "truncated to a preview") || !hasNoteWith(l.Notes, "only the newest are listed") {
		t.Errorf("queue messages notes %q; want the payload shortened and failures left out", l.Notes)
	}
	for _, n := range append(notes, l.Notes...) {
		for _, f := range resultFields {
			if strings.Contains(n, f) {
				t.Errorf("note %q names the result field %s", n, f)
			}
		}
	}
}
