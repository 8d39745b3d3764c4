package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A string argument given empty or blank, as an agent filling it from an
// empty variable gives it, is refused by every tool, naming the argument
// and what leaving it out means, rather than read as the argument left
// out: "queue": "" would widen a purge, discard or retry to every DLQ, and
// "kind": "" a filter to every kind. A cursor or an expect is refused
// too: an empty one is none. Nothing moves, on a writable server or a
// read-only one.
func TestEmptyStringArgumentsAreRefused(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	e := newEnvOn(t, st, ops.Options{AllowPayloads: true})
	ro := newEnvOn(t, st, ops.Options{ReadOnly: true})
	q := newQueue(t, st)
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge_card", Message: "boom"},
		pgtest.DeadSpec{Kind: "charge_card", Message: "boom"}, pgtest.DeadSpec{Kind: "charge_card", Message: "boom"})
	callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", map[string]any{"ids": ids[:1], "queue": q})
	for _, c := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"pgbus_dlq_purge", map[string]any{"queue": "", "older_than": "0s", "dry_run": true}, []string{"queue is empty", "leave queue out (for every DLQ)"}},
		{"pgbus_dlq_purge", map[string]any{"queue": " \t", "older_than": "0s", "confirm": true}, []string{"queue is empty"}},
		{"pgbus_dlq_purge", map[string]any{"queue": q, "older_than": ""}, []string{"older_than is empty", "give a value"}},
		{"pgbus_dlq_discard", map[string]any{"queue": "", "kind": "charge_card", "limit": 5, "confirm": true}, []string{"queue is empty", "leave queue out"}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "kind": "charge_card", "limit": 5, "confirm": true, "expect": ""}, []string{"expect is empty"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "kind": "", "limit": 5}, []string{"kind is empty", "leave kind out"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "error_class": " ", "limit": 5}, []string{"error_class is empty"}},
		{"pgbus_dlq_retry", map[string]any{"ids": ids[1:2], "queue": ""}, []string{"queue is empty"}},
		{"pgbus_dlq_restore", map[string]any{"ids": ids[:1], "queue": ""}, []string{"queue is empty"}},
		{"pgbus_queue_run_now", map[string]any{"queue": q, "kind": ""}, []string{"kind is empty"}},
		{"pgbus_circuit_open", map[string]any{"name": "http:bank", "for": "1h", "reason": ""}, []string{"reason is empty"}},
		{"pgbus_dlq_list", map[string]any{"since": ""}, []string{"since is empty"}},
		{"pgbus_dlq_list", map[string]any{"queue": q, "kind": ""}, []string{"kind is empty"}},
		{"pgbus_dlq_list", map[string]any{"queue": q, "cursor": ""}, []string{"cursor is empty", "leave cursor out (for the first page)"}},
		{"pgbus_dlq_summary", map[string]any{"by_field": ""}, []string{"by_field is empty"}},
		{"pgbus_dlq_show", map[string]any{"queue": "", "msg_id": ids[1]}, []string{"queue is empty"}},
		{"pgbus_queue_stats", map[string]any{"queue": ""}, []string{"queue is empty", "(for every queue)"}},
		{"pgbus_audit", map[string]any{"tool": ""}, []string{"tool is empty"}},
	} {
		for _, srv := range []*env{e, ro} {
			text := srv.callErr(t, c.tool, c.args, c.want...)
			if strings.Contains(text, "pgbus dlq") || len(text) > 300 {
				t.Errorf("%s(%v): %s", c.tool, c.args, text)
			}
		}
	}
	if n := pgtest.Live(t, st, q+"_dlq"); n != 2 {
		t.Errorf("the DLQ holds %d after the refused calls, want 2", n)
	}
	if n := pgtest.Archived(t, st, q+"_dlq"); n != 1 {
		t.Errorf("the DLQ's archive holds %d after the refused calls, want 1", n)
	}
}

// The schema of every tool says a string argument takes no empty string,
// for clients that check arguments before they call.
func TestStringArgumentsHaveMinLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	res, err := e.c.ListTools(testContext(t), mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tool := range res.Tools {
		for name, p := range tool.InputSchema.Properties {
			prop, _ := p.(map[string]any)
			if prop["type"] != "string" {
				continue
			}
			seen++
			if prop["minLength"] != float64(1) {
				t.Errorf("%s: argument %s has minLength %v, want 1", tool.Name, name, prop["minLength"])
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d string arguments seen", seen)
	}
}
