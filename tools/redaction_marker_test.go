package tools_test

import (
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus_dlq_retry refuses a corrected payload that still holds the
// redaction marker, as pgbus_dlq_show showed it: the error names where
// and what to do, and the message stays dead and unaudited.
func TestRetryRefusesRedactionMarker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{AllowPayloads: true})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Kind: "signup", Payload: `{"email": "ada@example.com", "password": "s3cret-pw"}`})

	shown := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q, "include_payload": true})
	if shown.RedactedValues == 0 {
		t.Fatalf("pgbus_dlq_show hid nothing in %s", shown.Payload)
	}
	text := e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": ids, "queue": q, "payload": shown.Payload},
		"redaction marker [REDACTED]", "$.password", "replace the [REDACTED] values with the real ones, or retry without a payload to keep the stored one")
	if pgtest.Live(t, e.st, q+"_dlq") != 1 || pgtest.Live(t, e.st, q) != 0 {
		t.Fatalf("the refused retry (%s) moved the message", text)
	}
	if rows := auditRows(t, e.st, "dlq_retry", fmt.Sprint(ids[0])); len(rows) != 0 {
		t.Fatalf("the refused retry was audited: %+v", rows)
	}
	// With the real value put back, the same call retries it.
	fixed := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids, "queue": q, "payload": map[string]any{"email": "ada@example.com", "password": "s3cret-pw"}})
	if fixed.Retried != 1 || pgtest.Live(t, e.st, q) != 1 {
		t.Fatalf("the retry with the real value: %+v", fixed)
	}
}

// A payload argument given as JSON null is no argument: the message is
// retried with its own payload, as without payload.
func TestRetryWithPayloadNullKeepsThePayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Payload: `{"order_id": 77}`})
	r := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids, "queue": q, "payload": nil})
	if r.Retried != 1 {
		t.Fatalf("retry with payload null: %+v", r)
	}
	if got := pgtest.Int(t, e.st, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE message = '{"order_id": 77}'::jsonb`); got != 1 {
		t.Fatal("the retried message lost its own payload")
	}
}
