package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A payload nested thousands deep, of a few kilobytes, is shown compact
// by pgbus dlq show, in words and with --json: indented, every level
// indenting every line within it, it printed as hundreds of megabytes.
func TestDeeplyNestedPayloadIsShownCompact(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	const depth = 5000
	payload := strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
	shallow := `{"order": {"id": 42, "lines": [1, 2]}}`
	ids := pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "k", Payload: payload}, pgtest.DeadSpec{Kind: "k", Payload: shallow})
	deep := d.ok(t, "dlq", "show", fmt.Sprint(ids[0]), "--queue", "orders")
	if len(deep) > 4*len(payload)+10_000 || !strings.Contains(deep, payload) {
		t.Fatalf("dlq show of a payload %d deep printed %d bytes; want it compact", depth, len(deep))
	}
	asJSON := d.ok(t, "dlq", "show", fmt.Sprint(ids[0]), "--queue", "orders", "--json")
	var m struct{ Payload json.RawMessage }
	if err := json.Unmarshal([]byte(asJSON), &m); err != nil || len(asJSON) > 4*len(payload)+10_000 || string(m.Payload) != payload {
		t.Fatalf("dlq show --json of a payload %d deep: %d bytes (%v); want it compact and whole", depth, len(asJSON), err)
	}
	// A payload of ordinary depth is still indented.
	if out := d.ok(t, "dlq", "show", fmt.Sprint(ids[1]), "--queue", "orders"); !strings.Contains(out, "\n    \"order\": {\n      \"id\": 42,\n") {
		t.Errorf("dlq show of an ordinary payload is not indented:\n%s", out)
	}
}
