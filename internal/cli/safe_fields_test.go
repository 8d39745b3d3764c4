package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus serve --safe-fields: health names the fields and dlq_show gives
// their values with the payload hidden.
func TestServeSafeFields(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ids := seedDLQ(t, url, "mail", `{"to":"b@example.com","tenant":"acme","plan":"pro"}`)
	c, _, _ := serveStdio(t, "--database-url", url, "--safe-fields", "tenant, plan")

	var h ops.Health
	if err := json.Unmarshal([]byte(toolText(callTool(t, c, "pgbus_health", map[string]any{}))), &h); err != nil ||
		h.Payloads.PayloadsAllowed || fmt.Sprint(h.Payloads.SafeFields) != "[plan tenant]" {
		t.Fatalf("health payload policy %+v, %v; want payloads hidden and safe fields plan and tenant", h.Payloads, err)
	}
	var m ops.DeadMessage
	res := callTool(t, c, "pgbus_dlq_show", map[string]any{"queue": "mail", "msg_id": ids[0], "include_payload": true})
	if err := json.Unmarshal([]byte(toolText(res)), &m); err != nil || m.PayloadShown || fmt.Sprint(m.SafeFields) != "map[plan:pro tenant:acme]" {
		t.Fatalf("show: payload shown %v, safe fields %v, %v; want the payload hidden and tenant and plan shown", m.PayloadShown, m.SafeFields, err)
	}
	if strings.Contains(toolText(res), "b@example.com") {
		t.Fatalf("show leaks the payload: %s", toolText(res))
	}
}

// The dlq commands take the safe fields of PGBUS_SAFE_FIELDS: dlq show
// prints them and dlq summary --by-field breaks groups down by one.
func TestDLQSafeFieldsCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedDLQ(t, d.url, "mail", `{"partner":"p-9"}`, `{"partner":"p-9"}`, `{"to":"x"}`)
	d.env = append(d.env, "PGBUS_SAFE_FIELDS=partner")
	out := d.ok(t, "dlq", "summary", "--by-field", "partner")
	if !strings.Contains(out, "partner=p-9 (2)") || !strings.Contains(out, "no partner (1)") || !strings.Contains(out, "no such mailbox") {
		t.Fatalf("summary by partner lacks the breakdown or the message:\n%s", out)
	}
	if r := pgbus(t, d.env, "dlq", "summary", "--by-field", "to"); r.code != 2 || !strings.Contains(r.stderr, "not a safe field") {
		t.Fatalf("summary by an unsafe field: exit %d, stderr %q; want exit 2 saying it is not safe", r.code, r.stderr)
	}
	var sum ops.DLQSummary
	d.json(t, &sum, "dlq", "summary")
	show := d.ok(t, "dlq", "show", fmt.Sprint(sum.Groups[0].SampleMsgIDs[len(sum.Groups[0].SampleMsgIDs)-1]), "--queue", "mail", "--no-payload")
	if !strings.Contains(show, "safe fields:") || !strings.Contains(show, "partner=p-9") {
		t.Fatalf("show lacks the safe fields:\n%s", show)
	}
}

// Safe fields the CLI is given wrong, or none when --by-field needs one,
// are usage errors (exit 2) that say where they are set.
func TestSafeFieldsMistakes(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	for _, c := range []struct {
		env  []string
		args []string
		says string
	}{
		{[]string{"PGBUS_SAFE_FIELDS=,,"}, []string{"dlq", "summary"}, "PGBUS_SAFE_FIELDS"},
		{[]string{"PGBUS_SAFE_FIELDS=tenant;drop"}, []string{"dlq", "list"}, "name payload keys joined by dots"},
		{nil, []string{"dlq", "summary", "--by-field", "order_id"}, "set PGBUS_SAFE_FIELDS=order_id"},
	} {
		r := pgbus(t, append(d.env, c.env...), c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.says) {
			t.Errorf("%v pgbus %v: exit %d, %q; want exit 2 saying %q", c.env, c.args, r.code, r.stderr, c.says)
		}
	}
}
