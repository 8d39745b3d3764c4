package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A corrected payload too large for a tool call (over the arguments' cap
// or over the payload's own) is refused without echoing it, saying what to
// do: an operator retries with the corrected payload from a file with the
// command line, which the error names, with the server's global flags, as
// a command in its next steps. Nothing moves and nothing is audited.
func TestLargeCorrectedPayloadNamesTheCommand(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	d := newDeps(t, st, ops.Options{})
	d.CommandFlags = " --config /etc/pgbus.yaml"
	e := newEnvOfDeps(t, st, d)
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	id := ids[0]
	want := fmt.Sprintf("pgbus dlq retry %d --payload @payload.json --queue %s --config /etc/pgbus.yaml", id, q)

	for _, size := range []int{2 << 20, 300 << 10} {
		args := map[string]any{"ids": ids, "queue": q, "payload": map[string]any{"a": strings.Repeat("x", size)}}
		res := e.call(t, "pgbus_dlq_retry", args)
		text := resultText(res)
		t.Logf("%d bytes: %.600s", size, text)
		if !res.IsError || !strings.Contains(text, "too large for a tool call") || !strings.Contains(text, want) {
			t.Errorf("a %d-byte payload: %.600s; want an error saying it is too large for a tool call, naming %s", size, text, want)
		}
		if strings.Contains(text, "xxxxxxxx") {
			t.Errorf("the error of a %d-byte payload echoes it: %.200s", size, text)
		}
		if len(text) > 600 {
			t.Errorf("the error of a %d-byte payload is %d bytes: %s", size, len(text), text)
		}
		m := e.metaOf(t, "pgbus_dlq_retry", args)
		if m.Kind != ops.KindUsage {
			t.Errorf("%d bytes: kind %q, want %q", size, m.Kind, ops.KindUsage)
		}
		found := false
		for _, n := range m.Next {
			if n.Command == want {
				found = true
			}
			if strings.Contains(n.Command+n.Why, "xxxxxxxx") {
				t.Errorf("%d bytes: a next step echoes the payload: %.200s", size, n.Command+n.Why)
			}
		}
		if !found {
			t.Errorf("%d bytes: next %+v, want the command %q", size, m.Next, want)
		}
	}
	// Without one id, the command says where the id goes.
	args := map[string]any{"queue": q, "kind": "k", "limit": 5, "payload": map[string]any{"a": strings.Repeat("x", 1<<20)}}
	res := e.call(t, "pgbus_dlq_retry", args)
	if text := resultText(res); !res.IsError || !strings.Contains(text, "pgbus dlq retry ID --payload @payload.json --queue "+q) {
		t.Errorf("a large payload by filter: %.600s; want the command with ID in place of the id", text)
	}

	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 1 {
		t.Errorf("the DLQ holds %d after the refused retries, want 1", n)
	}
	if rows := auditRows(t, e.st, "dlq_retry", q); len(rows) != 0 {
		t.Errorf("refused retries were audited: %+v", rows)
	}
}
