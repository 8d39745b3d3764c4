package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An error naming a queue, a job kind or a URL parameter after a secret
// word (refresh_token, api_key) reaches an agent whole, as it was stored
// and as pgbus_dlq_show shows it: what happened there is no secret. The
// secret in the same message is hidden.
func TestDLQShowKeepsErrorsAboutSecretLookingNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	const (
		count   = "queue refresh_token: 3 messages"
		refused = "enqueue to refresh_token: connection refused"
		status  = ": 500"
		secret  = "abcd1234efgh"
	)
	message := count + "; " + refused + "; GET https://api.example.com/v1/items?api_key=" + secret + status
	ids := pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: "token_refresh", Message: message, Trace: refused + "\n\tat worker.go:17"})
	shown := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q})
	if shown.DeadLetter == nil || len(shown.History) == 0 {
		t.Fatalf("pgbus_dlq_show gave no block or history: %+v", shown)
	}
	for what, text := range map[string]string{
		"block error_message":   shown.DeadLetter.ErrorMessage,
		"block backtrace":       shown.DeadLetter.Backtrace,
		"history error_message": shown.History[len(shown.History)-1].ErrorMessage,
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the api_key: %q", what, text)
		}
		want := []string{refused}
		if !strings.Contains(what, "backtrace") {
			want = append(want, count, "api_key="+ops.Redacted+status)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %q lost %q", what, text, w)
			}
		}
	}
	if shown.RedactedValues != 2 {
		t.Errorf("redacted_values %d, want 2 (the api_key in the block and in the history)", shown.RedactedValues)
	}
}
