package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A dead message with more headers than a response shows: pgbus's own
// come first, then by name those that fit, and the operation says how
// many it left out; the page shows those, and says the others are not
// shown, where it said the message had none.
func TestManyHeadersAreShortenedNotDropped(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_hdrs")
	h := map[string]string{"pgbus_kind": "charge"}
	for i := range 500 {
		h[fmt.Sprintf("x_trace_%03d", i)] = strings.Repeat("v", 100)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Message: "boom", Headers: string(raw)})
	m, err := newService(t, st).DLQShow(pgtest.Context(t), ops.DLQShowRequest{Queue: q, MsgID: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	var shown map[string]string
	if err := json.Unmarshal(m.Headers, &shown); err != nil || shown["pgbus_kind"] != "charge" || shown["x_trace_000"] == "" || shown["x_trace_499"] != "" ||
		m.HeadersLeftOut != 501-len(shown) || m.HeadersLeftOut == 0 {
		t.Fatalf("the show of 501 headers: %d shown (%v), %d left out, notes %v; want pgbus_kind and the first by name, the others counted", len(shown), err, m.HeadersLeftOut, m.Notes)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get(fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d", q, ids[0]))
	want := fmt.Sprintf("%d headers are not shown", m.HeadersLeftOut)
	if code != http.StatusOK || !strings.Contains(strings.ReplaceAll(page, ",", ""), want) || strings.Contains(page, "None besides the dead-letter block") || !strings.Contains(page, "x_trace_000") {
		t.Fatalf("the page of a message with 501 headers: %d; want the first ones and %q, not that it has none\n%.3000s", code, want, page)
	}
}
