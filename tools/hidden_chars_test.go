package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A dead message whose error and payload hold characters that reorder or
// hide text (a right-to-left override, a zero-width space) is shown with
// them escaped in the text content, which hosts give the model, as the
// CLI and the dashboard show them: an agent quoting it to a person cannot
// pass on text that reads otherwise than it is written. The values stay
// the same once the JSON is read, as the structured content has them.
func TestToolsEscapeCharactersThatHideText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{AllowPayloads: true})
	q := newQueue(t, e.st)
	const message = "refund of \u202eDSU 001\u202c to acct\u200b42 refused\U000E0049\U000E0047"
	ids := pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: "refund", Message: message, Payload: `{"note": "pay \u202eevil\u202c now\udb40\udc41"}`})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q, "include_payload": true}},
		{"pgbus_dlq_list", map[string]any{"queue": q}},
		{"pgbus_dlq_summary", map[string]any{"queue": q}},
	} {
		res := e.call(t, c.tool, c.args)
		text := resultText(res)
		if res.IsError {
			t.Fatalf("%s: tool error: %s", c.tool, text)
		}
		if strings.ContainsAny(text, "\u202e\u202c\u200b\U000E0049\U000E0041") {
			t.Errorf("%s: its text holds hidden characters as they are: %s", c.tool, text)
		}
		if !strings.Contains(text, `\u202e`) || !strings.Contains(text, `\u200b`) || !strings.Contains(text, `\udb40\udc49\udb40\udc47`) {
			t.Errorf("%s: its text does not show the override, the zero-width space and the tag characters escaped: %s", c.tool, text)
		}
	}
	shown := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q, "include_payload": true})
	if shown.DeadLetter == nil || shown.DeadLetter.ErrorMessage != message {
		t.Errorf("the error read back from the JSON is %+v; want %q as sent", shown.DeadLetter, message)
	}
	if !strings.Contains(string(shown.Payload), "pay \u202eevil\u202c now\U000E0041") && !strings.Contains(string(shown.Payload), `pay \u202eevil\u202c now\udb40\udc41`) {
		t.Errorf("the payload read back is %s; want its note as sent", shown.Payload)
	}
}

// A read-only server's refusal quotes the call's values in the command it
// relays: their hidden characters are escaped there too.
func TestRefusalEscapesCharactersThatHideText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{ReadOnly: true})
	q := newQueue(t, e.st)
	text := e.callErr(t, "pgbus_dlq_retry", map[string]any{"queue": q, "text": "pay\u202eevil", "limit": 5}, "an operator can run")
	if strings.ContainsRune(text, '\u202e') || !strings.Contains(text, `\u202e`) {
		t.Errorf("the refusal holds the override as it is: %q", text)
	}
}
