package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus dlq retry ID --payload refuses a corrected payload of another JSON
// type than the dead message's, in plain output and with --json alike
// (exit 2, one error line, nothing on stdout): JSON quoted once more for
// the shell is told to be passed unquoted, with the command that does it;
// a plain string or a number for an object names both types and the
// commands that run a job with the other type. Each refusal leaves the
// message in its DLQ and writes nothing. A correction of the same type is
// retried with it: an object for an object, a string for a string.
func TestRetryPayloadOfAnotherTypeIsRefused(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ids := pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Kind: "charge", Payload: `{"order_id": 42}`}, pgtest.DeadSpec{Kind: "note", Payload: `"hello"`})
	obj, str := fmt.Sprint(ids[0]), fmt.Sprint(ids[1])

	cases := []struct {
		name, payload string
		says          []string
	}{
		{"string holding an object", `"{\"order_id\": 43}"`, []string{
			"the corrected payload is a JSON string holding JSON (an object), and the dead message's payload is a JSON object: pass the object itself as the payload, not quoted in a string",
			"see pgbus dlq retry " + obj + ` --payload '{"order_id":43}' --queue orders`}},
		{"string holding an array", `"[1, 2]"`, []string{
			"a JSON string holding JSON (an array), and the dead message's payload is a JSON object: pass the array itself",
			"see pgbus dlq retry " + obj + " --payload '[1,2]' --queue orders"}},
		{"plain string", `"notjson"`, []string{
			"the dead message's payload is a JSON object; the correction is a string, which its job would get instead and fail on again: give the corrected payload as an object, " +
				"or, for a job that is to run with a string, discard this message, then send that payload as a new message to queue orders",
			"see pgbus dlq discard " + obj + ` --queue orders_dlq or pgbus send orders '"notjson"' --kind charge`}},
		{"number", `42`, []string{
			"the dead message's payload is a JSON object; the correction is a number",
			"see pgbus dlq discard " + obj + " --queue orders_dlq or pgbus send orders 42 --kind charge"}},
	}
	before := d.snapshot(t)
	for _, c := range cases {
		for _, out := range [][]string{nil, {"--json"}} {
			args := append([]string{"dlq", "retry", obj, "--queue", "orders", "--payload", c.payload}, out...)
			stderr := d.fails(t, 2, args...)
			for _, w := range c.says {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s %v: stderr %q does not say %q", c.name, out, stderr, w)
				}
			}
		}
	}
	if after := d.snapshot(t); after != before || pgtest.Live(t, s, "orders_dlq") != 2 {
		t.Fatalf("the refused retries changed the database: %s, then %s", before, after)
	}

	d.ok(t, "dlq", "retry", obj, "--queue", "orders", "--payload", `{"order_id": 43}`)
	var r ops.DLQRetry
	d.json(t, &r, "dlq", "retry", str, "--queue", "orders", "--payload", `"bye"`)
	if r.Retried != 1 || pgtest.Live(t, s, "orders_dlq") != 0 {
		t.Fatalf("retries of the same type = %+v; want both retried", r)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders WHERE message IN ('{"order_id": 43}'::jsonb, '"bye"'::jsonb)`); n != 2 {
		t.Fatalf("%d retried messages carry their corrected payload, want 2", n)
	}
}
