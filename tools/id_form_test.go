package tools_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An id has one spelling in the tools' arguments as in resource URIs:
// ids are JSON integers (not strings; 42.0 and 42e0 are the integer 42,
// as JSON Schema counts them), and the ids an expect lists are decimal
// digits alone, so that "042" or "+42" is refused, saying the form
// expected, rather than moving message 42.
func TestToolIDsHaveOneSpelling(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Kind: "charge"})
	id := ids[0]

	e.callErr(t, "pgbus_dlq_show", json.RawMessage(fmt.Sprintf(`{"queue": %q, "msg_id": "%d"}`, q, id)), "msg_id")
	for _, args := range []string{
		fmt.Sprintf(`{"queue": %q, "msg_id": %d.0}`, q, id),
		fmt.Sprintf(`{"queue": %q, "msg_id": %de0}`, q, id),
	} {
		if m := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", json.RawMessage(args)); m.MsgID != id {
			t.Errorf("%s showed message %d, want %d", args, m.MsgID, id)
		}
	}
	e.callErr(t, "pgbus_dlq_retry", json.RawMessage(fmt.Sprintf(`{"queue": %q, "ids": ["%d"]}`, q, id)), "ids")

	for _, tool := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard"} {
		for _, expect := range []string{fmt.Sprintf("0%d", id), fmt.Sprintf("+%d", id), fmt.Sprintf("%d, 0%d", id, id)} {
			args := map[string]any{"queue": q, "kind": "charge", "limit": 10, "expect": expect, "confirm": true}
			if tool == "pgbus_dlq_retry" {
				delete(args, "confirm")
			}
			e.callErr(t, tool, args, ops.IDForm)
		}
	}
	if n := pgtest.Int(t, e.st, fmt.Sprintf(`SELECT count(*) FROM pgmq.q_%s_dlq`, q)); n != 1 {
		t.Fatalf("%d messages left in the DLQ after calls that should all have been refused; want 1", n)
	}
	// The id as the list writes it moves the message.
	out := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "kind": "charge", "limit": 10, "expect": fmt.Sprint(id)})
	if out.Retried != 1 {
		t.Fatalf("retry with expect %d: %+v", id, out)
	}
}
