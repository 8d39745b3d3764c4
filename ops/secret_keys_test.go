package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// documentedSecretKeys are the keys README.md (Security, Redaction) names,
// written out here rather than taken from the code's list, so that a key
// dropped from the code fails this test.
var documentedSecretKeys = []string{
	"password", "passphrase", "pwd", "secret", "token", "api_key", "access_key",
	"authorization", "credential", "private_key", "cookie", "session", "jwt",
	"signature", "card_number", "cvv", "ssn",
}

// secretValue is the value a test puts under key: unique to the key, so
// that finding it in output names the key that leaked.
func secretValue(key string) string { return "v-" + strings.ReplaceAll(key, "_", "") + "-9Zq" }

// Each documented key, on its own: IsSecretKey knows it, its value is
// hidden deep in a payload and in key=value text, and the value next to it
// stays.
func TestEachDocumentedSecretKey(t *testing.T) {
	t.Parallel()
	for _, key := range documentedSecretKeys {
		val := secretValue(key)
		if !ops.IsSecretKey(key) {
			t.Errorf("IsSecretKey(%q) = false", key)
		}
		raw := fmt.Sprintf(`{"items": [{"sku": "A-1", "meta": {%q: %q, "order_id": 42}}]}`, key, val)
		out, n, ok := ops.RedactJSON(json.RawMessage(raw))
		if !ok || n != 1 || strings.Contains(string(out), val) || !strings.Contains(string(out), `"order_id":42`) ||
			!strings.Contains(string(out), fmt.Sprintf("%q:%q", key, ops.Redacted)) {
			t.Errorf("RedactJSON(%s) = %s (%d hidden, ok %v); want only the %s value hidden", raw, out, n, ok, key)
		}
		text := fmt.Sprintf("charge failed: %s=%s order_id=42", key, val)
		if got, n := ops.RedactText(text); n != 1 || strings.Contains(got, val) || !strings.Contains(got, "order_id=42") {
			t.Errorf("RedactText(%q) = %q (%d hidden); want the %s value hidden", text, got, n, key)
		}
	}
}

// A dead message with every documented key in its headers and payload
// shows none of their values, whatever the view shows of it.
func TestDocumentedSecretKeysInAMessage(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	payload := map[string]any{"order_id": 42}
	headers := map[string]any{"pgbus_kind": "k", "author": "ada"}
	for _, key := range documentedSecretKeys {
		payload[key] = secretValue(key)
		headers[key] = secretValue(key) + "-h"
	}
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Payload: mustJSON(t, payload), Headers: mustJSON(t, headers)})
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	m, err := svc.DLQShow(testContext(t), ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
	if err != nil || !m.PayloadShown {
		t.Fatalf("show %d: payload shown %v, %v", ids[0], m.PayloadShown, err)
	}
	shown := mustJSON(t, m)
	for _, key := range documentedSecretKeys {
		if strings.Contains(shown, secretValue(key)) {
			t.Errorf("the value under %s shows in the view of the message", key)
		}
	}
	if !strings.Contains(string(m.Payload), `"order_id":42`) || !strings.Contains(string(m.Headers), `"author":"ada"`) {
		t.Errorf("the neighbours of the secrets were lost: payload %s, headers %s", m.Payload, m.Headers)
	}
}
