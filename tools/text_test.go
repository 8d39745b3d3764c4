package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// TestNULRefused: a NUL character (the \u0000 escape, the one JSON can
// carry that PostgreSQL cannot store) in any string argument is a tool
// error naming the argument, without a database error, and a refused
// write is neither done nor audited.
func TestNULRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	nul := "a\x00b"
	cases := []struct {
		tool, field string
		args        map[string]any
	}{
		{"pgbus_dlq_summary", "error_class", map[string]any{"error_class": nul}},
		{"pgbus_dlq_list", "kind", map[string]any{"queue": q, "kind": nul}},
		{"pgbus_dlq_list", "cursor", map[string]any{"queue": q, "cursor": nul}},
		{"pgbus_dlq_list", "text", map[string]any{"text": nul}},
		{"pgbus_dlq_show", "queue", map[string]any{"queue": nul, "msg_id": ids[0]}},
		{"pgbus_queue_messages", "state", map[string]any{"queue": q, "state": nul}},
		{"pgbus_queue_stats", "queue", map[string]any{"queue": nul}},
		{"pgbus_audit", "client", map[string]any{"client": nul}},
		{"pgbus_audit", "tool", map[string]any{"tool": nul}},
		{"pgbus_dlq_retry", "queue", map[string]any{"ids": ids, "queue": q + nul}},
		{"pgbus_dlq_discard", "since", map[string]any{"queue": q, "since": nul, "limit": 10}},
		{"pgbus_circuit_reset", "name", map[string]any{"name": nul}},
		{"pgbus_queue_pause", "queue", map[string]any{"queue": nul}},
		{"pgbus_queue_run_now", "queue", map[string]any{"queue": nul}},
	}
	for _, c := range cases {
		text := e.callErr(t, c.tool, c.args, c.field+" cannot be used", "NUL character", "pass UTF-8 text")
		if strings.Contains(text, "SQLSTATE") {
			t.Errorf("%s %s: %q carries a database error", c.tool, c.field, text)
		}
	}
	if rows := auditRows(t, e.st, "dlq_retry", q); len(rows) != 0 {
		t.Errorf("a refused retry was audited: %+v", rows)
	}
	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 1 {
		t.Errorf("the DLQ holds %d after refused calls, want 1", n)
	}
}

// A result's text keeps <, > and & as they are: an error pattern reads
// "order <n> failed", not "order \u003cn\u003e failed", six characters for
// one to an agent.
func TestResultTextKeepsAngleBrackets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "order 42 failed & <b>bold</b>"})
	text := resultText(e.call(t, "pgbus_dlq_summary", map[string]any{"queue": q}))
	if !strings.Contains(text, "order <n> failed & <b>bold</b>") || strings.Contains(text, `\u003c`) || strings.Contains(text, `\u0026`) {
		t.Errorf("summary text escapes what it need not: %s", text)
	}
}
