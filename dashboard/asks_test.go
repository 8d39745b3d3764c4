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

// mcpWords are what an agent passes to a tool, which a page must not tell
// a person to pass.
var mcpWords = []string{"include_payload", "full_history", "pass tool", "next_cursor"}

// The notes of a page that say how to see what it left out name the
// page's own controls and links, never a tool's arguments: a payload not
// asked for, sends left out of the audit log.
func TestNotesNameThePagesControls(t *testing.T) {
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
