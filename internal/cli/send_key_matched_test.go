package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A send whose idempotency key matches a message sent before says so:
// stdout keeps the id (of the message sent before, as scripts read it),
// stderr says that nothing new was sent, and --json carries already_sent.
// It printed the id alone, as a new send does.
func TestSendSaysTheKeyMatchedAMessageAlreadySent(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	first := pgbus(t, d.env, "send", "orders", `{}`, "--idempotency-key", "order-9")
	if first.code != 0 || strings.Contains(first.stderr, "already sent") {
		t.Fatalf("first send: exit %d\n%s\n%s", first.code, first.stdout, first.stderr)
	}
	id := strings.TrimSpace(first.stdout)
	again := pgbus(t, d.env, "send", "orders", `{"other": true}`, "--idempotency-key", "order-9")
	want := fmt.Sprintf("idempotency key %q matched message %s, already sent to orders: nothing new was sent", "order-9", id)
	if again.code != 0 || strings.TrimSpace(again.stdout) != id || !strings.Contains(again.stderr, want) {
		t.Fatalf("second send with the key: exit %d\nstdout %q\nstderr %q\nwant the id %s, and stderr saying %q", again.code, again.stdout, again.stderr, id, want)
	}
	r := pgbus(t, d.env, "send", "orders", `{}`, "--idempotency-key", "order-9", "--json")
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || fmt.Sprint(out["msg_id"]) != id || out["already_sent"] != true {
		t.Fatalf("--json with the key: exit %d %s %v; want msg_id %s and already_sent true", r.code, r.stdout, err, id)
	}
	r = pgbus(t, d.env, "send", "orders", `{}`, "--idempotency-key", "order-10", "--json")
	out = nil
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out["already_sent"] != nil {
		t.Fatalf("--json with a new key: exit %d %s %v; want no already_sent", r.code, r.stdout, err)
	}
}
