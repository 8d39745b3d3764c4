package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A downstream that echoes the request body in its error shows a card
// number in the error text under the key its payload hides it under:
// every tool that shows the error hides it there too, as it hides it in
// the payload, and keeps the words around it.
func TestDLQToolsHideCardNumbersInErrorText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{AllowPayloads: true})
	q := newQueue(t, e.st)
	const card = "5500005555555559"
	message := `POST https://pay.example/charge: 422 Unprocessable Entity: {"error": "card declined", "request": {"cvv": "123", "card": "` + card + `", "order_id": 2}}`
	ids := pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{
		Kind: "charge", Message: message, Trace: message + "\n\tat worker.go:17",
		Payload: `{"card": "` + card + `", "cvv": "123", "order_id": 2}`,
	})
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
		if strings.Contains(text, card) {
			t.Errorf("%s shows the card number: %s", c.tool, text)
		}
		for _, want := range []string{"card declined", `\"card\": \"` + ops.Redacted + `\"`, `\"order_id\": 2`} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lost %s: %s", c.tool, want, text)
			}
		}
	}
	shown := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q, "include_payload": true})
	if len(shown.History) == 0 || shown.DeadLetter == nil {
		t.Fatalf("pgbus_dlq_show gave no block or history: %+v", shown)
	}
	for what, s := range map[string]string{
		"block error_message":   shown.DeadLetter.ErrorMessage,
		"block backtrace":       shown.DeadLetter.Backtrace,
		"history error_message": shown.History[len(shown.History)-1].ErrorMessage,
		"payload":               string(shown.Payload),
	} {
		if strings.Contains(s, card) || !strings.Contains(s, ops.Redacted) {
			t.Errorf("%s does not hide the card number: %s", what, s)
		}
	}
}
