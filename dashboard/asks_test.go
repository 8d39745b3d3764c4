package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// mcpWords are what an agent passes to a tool, which a page must not tell
// a person to pass.
var mcpWords = []string{"include_payload", "full_history", "pass tool", "next_cursor"}

// The notes of a page that say how to see what it left out name the
// page's own controls and links, never a tool's arguments: a payload not
// asked for, sends left out of the audit log.
func TestNotesNameThePagesControls(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, st, "dash_asks")
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "mail", Message: "m"})
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token, allowPayloads: true}))
	b.login(token)

	for _, c := range []struct{ path, says string }{
		{"/queues/" + q, "payloads hidden: “Show the headers and payloads” shows them (secrets stay redacted)"},
		{fmt.Sprintf("/dlq/message?queue=%s&id=%d", q, ids[0]), "payload hidden: “Show the payload” shows it (secrets stay redacted)"},
		{"/audit", `Sends are left out: <a href="/audit?op=all">show every operation, sends too</a> · <a href="/audit?op=send">only sends</a>`},
	} {
		code, page, _ := b.get(c.path)
		if code != http.StatusOK || !strings.Contains(page, c.says) {
			t.Errorf("GET %s: %d, want it to say %q\n%s", c.path, code, c.says, page)
		}
		for _, w := range mcpWords {
			if strings.Contains(page, w) {
				t.Errorf("GET %s names %q, a tool's word:\n%s", c.path, w, page)
			}
		}
	}
}

// A message shortened further so that its page stays under the response
// bound says so, and sends no one to a terminal: the page has no fuller
// view to name.
func TestShortenedMessageNamesNoCommand(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, st, "dash_whole")
	payload := fmt.Sprintf(`{"lines": %q}`, strings.Repeat("y", 20_000))
	ids, err := st.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(payload),
		Headers: json.RawMessage(`{"note": "` + strings.Repeat("h", 3000) + `"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	longErr := strings.Repeat("connection reset by peer while writing the body; ", 80)
	trace := strings.Repeat("github.com/acme/orders/internal/charge.(*Client).Do(0xc000123456)\n\t/src/charge/client.go:123 +0x1f\n", 15)
	for attempt := 1; attempt <= 30; attempt++ {
		f := store.Failure{Attempt: attempt, Kind: "charge", ErrorClass: "net.OpError", ErrorMessage: fmt.Sprintf("attempt %d: %s", attempt, longErr), Backtrace: trace}
		if _, err := st.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[0], Failure: f}}); err != nil {
			t.Fatal(err)
		}
	}
	moved, err := st.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: ids[0], Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 30,
		Failure: &store.Failure{Attempt: 31, Kind: "charge", ErrorClass: "net.OpError", ErrorMessage: longErr, Backtrace: trace}}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter the message: %d moved, %v", len(moved), err)
	}
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token, allowPayloads: true}))
	b.login(token)

	path := fmt.Sprintf("/dlq/message?queue=%s&id=%d&payload=1", q, moved[0].DLQMsgID)
	code, page, _ := b.get(path)
	if code != http.StatusOK || !strings.Contains(page, "so that the response stays under 16,000 characters") {
		t.Fatalf("GET %s: %d, want it to say the message was shortened further\n%s", path, code, page)
	}
	for _, w := range []string{"command line", "pgbus dlq show"} {
		if strings.Contains(page, w) {
			t.Errorf("GET %s names %q, the command line's words:\n%s", path, w, page)
		}
	}
}
