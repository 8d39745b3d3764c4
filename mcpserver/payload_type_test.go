package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Over a real transport, pgbus_dlq_retry refuses a corrected payload of
// another JSON type than the dead message's: JSON passed as a string
// holding it is told to be passed as the JSON itself, with the call that
// does it; a plain string or a number for an object names both types and
// the way to run a job with the other type (discard, then send). Each
// refusal leaves the message in its DLQ and writes no audit entry, as the
// other refused arguments do. A correction of the same type is retried
// with it.
func TestRetryPayloadOfAnotherTypeIsRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	ids := deadLetter(t, s, q, `{"order_id": 42}`)
	id := ids[0]
	dlq := store.DLQName(q)
	retry := func(payload any) map[string]any {
		return map[string]any{"ids": ids, "queue": q, "payload": payload}
	}

	cases := []struct {
		name    string
		payload any
		want    []string
		// unquoted is the payload of the hint, the same call with the
		// JSON unquoted; "" when there is none.
		unquoted string
	}{
		{"string holding an object", `{"order_id": 43}`, []string{
			"the corrected payload is a JSON string holding JSON (an object), and the dead message's payload is a JSON object: pass the object itself as the payload, not quoted in a string"},
			`{"order_id":43}`},
		{"string holding an array", ` [1, 2] `, []string{
			"a JSON string holding JSON (an array), and the dead message's payload is a JSON object: pass the array itself as the payload, not quoted in a string"},
			`[1,2]`},
		{"plain string", "notjson", []string{
			"the dead message's payload is a JSON object; the correction is a string, which its job would get instead and fail on again: give the corrected payload as an object, " +
				"or, for a job that is to run with a string, discard this message, then send that payload as a new message to queue " + q,
			fmt.Sprintf(`see pgbus_dlq_discard {"ids":[%d],"queue":%q}`, id, dlq),
			fmt.Sprintf(`the CLI: pgbus send %s '"notjson"' --kind charge`, q)}, ""},
		{"number", 42, []string{
			"the dead message's payload is a JSON object; the correction is a number",
			fmt.Sprintf(`the CLI: pgbus send %s 42 --kind charge`, q)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, dry := range []bool{true, false} {
				args := retry(tc.payload)
				args["dry_run"] = dry
				want := tc.want
				if tc.unquoted != "" {
					same := `see pgbus_dlq_retry {`
					if dry {
						same += `"dry_run":true,`
					}
					want = append(want, same+fmt.Sprintf(`"ids":[%d],"payload":%s,"queue":%q}`, id, tc.unquoted, q))
				}
				wantToolError(t, fmt.Sprintf("%s (dry run %v)", tc.name, dry), callTool(t, c, "pgbus_dlq_retry", args), want...)
			}
			if !inDLQ(t, s, q, id) || pgtest.Live(t, s, q) != 0 {
				t.Fatalf("the refused retry moved message %d", id)
			}
		})
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log WHERE tool = 'dlq_retry' AND arguments->'filter'->>'queue' = $1`, q); n != 0 {
		t.Fatalf("%d audit entries for the refused retries, want none, as for other refused arguments", n)
	}

	// The same type: retried, with the corrected payload.
	var r ops.DLQRetry
	structured(t, callTool(t, c, "pgbus_dlq_retry", retry(map[string]any{"order_id": 43})), &r)
	if r.Retried != 1 || inDLQ(t, s, q, id) {
		t.Fatalf("retry with an object for an object = %+v; want it retried", r)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE message = '{"order_id": 43}'::jsonb`); n != 1 {
		t.Fatal("the retried message does not carry the corrected payload")
	}
}

// A dead message whose payload is a string takes a string, whatever its
// text: some producers store JSON in a string, and the job expects one.
func TestRetryStringPayloadForAStringOverHTTP(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	ids := deadLetter(t, s, q, `"hello"`, `"{\"order_id\": 1}"`)
	for i, payload := range []string{"bye", `{"order_id": 2}`} {
		var r ops.DLQRetry
		structured(t, callTool(t, c, "pgbus_dlq_retry", map[string]any{"ids": ids[i : i+1], "queue": q, "payload": payload}), &r)
		if r.Retried != 1 {
			t.Fatalf("retry of a string with the string %q = %+v; want it retried", payload, r)
		}
		want, _ := json.Marshal(payload)
		if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE message = $1::jsonb`, string(want)); n != 1 {
			t.Fatalf("the retried message does not carry the string %s", want)
		}
	}
}
