package tools_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An explicit empty ids is no request to act by filter: a retry or discard
// given "ids": [] beside filters is refused, saying there is nothing to do
// and that a call by filter leaves ids out. A null for a boolean or an
// array argument is refused by every tool, naming the argument, rather
// than read as false or as no ids: "dry_run": null ran a real retry.
// Nothing moves.
func TestEmptyIDsAndNullArgumentsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{AllowPayloads: true})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: "k", Message: "boom"}, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	for _, c := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"pgbus_dlq_retry", map[string]any{"queue": q, "ids": []int64{}, "limit": 100}, []string{"ids is empty", "nothing to retry", "leave ids out"}},
		{"pgbus_dlq_retry", map[string]any{"ids": []int64{}}, []string{"ids is empty", "nothing to retry"}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "ids": []int64{}, "limit": 100, "confirm": true}, []string{"ids is empty", "nothing to discard", "leave ids out"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "limit": 100, "dry_run": nil}, []string{"dry_run", "null", "true or false"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "limit": 100, "clear_deadline": nil}, []string{"clear_deadline", "null"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "limit": 100, "ids": nil}, []string{"ids", "null", "array of integers"}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "limit": 100, "dry_run": nil, "confirm": true}, []string{"dry_run", "null"}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "limit": 100, "dry_run": true, "confirm": nil}, []string{"confirm", "null"}},
		{"pgbus_dlq_restore", map[string]any{"queue": q, "ids": nil}, []string{"ids", "null"}},
		{"pgbus_dlq_purge", map[string]any{"queue": q, "dry_run": nil}, []string{"dry_run", "null"}},
		{"pgbus_dlq_show", map[string]any{"queue": q, "msg_id": ids[0], "include_payload": nil}, []string{"include_payload", "null"}},
		{"pgbus_queue_run_now", map[string]any{"queue": q, "dry_run": nil}, []string{"dry_run", "null"}},
	} {
		text := e.callErr(t, c.tool, c.args, c.want...)
		if len(text) > 400 {
			t.Errorf("%s: error is %d bytes long: %s", c.tool, len(text), text)
		}
	}
	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 2 {
		t.Errorf("the DLQ holds %d after the refused calls, want 2", n)
	}
	// A payload given as null is still documented as left out, and a
	// string's null as the string not given.
	callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids[:1], "queue": q, "dry_run": true, "payload": nil})
	callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "kind": nil})
}
