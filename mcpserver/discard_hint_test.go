package mcpserver_test

import (
	"testing"

	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// guardedHint returns the hint of a discard's result or refusal that
// carries expect, failing the test without one.
func guardedHint(t *testing.T, what string, hints []ops.Hint) ops.Hint {
	t.Helper()
	for _, h := range hints {
		if h.Op == "pgbus_dlq_discard" && h.Args["expect"] != nil {
			return h
		}
	}
	t.Fatalf("%s: no pgbus_dlq_discard hint with expect in %+v", what, hints)
	return ops.Hint{}
}

// An agent whose client cannot ask its user follows the hints of a
// discard's dry run to the guarded discard: the hint's arguments, as
// given, discard the dry run's set, and a call that forgot confirm is told
// to add it to the same expect, not to drop the guard.
func TestDiscardDryRunHintsLeadToGuardedDiscardWithoutElicitation(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)

	var dry ops.DLQDiscard
	structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q, "dry_run", true)), &dry)
	next := guardedHint(t, "dry run", dry.Next)
	if next.Args["confirm"] != true || next.Args["expect"] != dry.Expect {
		t.Fatalf("dry run's hint = %+v; want the expect %q and confirm, which a client without elicitation needs", next, dry.Expect)
	}

	noConfirm := discardArgs(q, "expect", dry.Expect)
	res := callTool(t, c, "pgbus_dlq_discard", noConfirm)
	wantToolError(t, "guarded discard without confirm", res, "confirm", "nothing was discarded", dry.Expect)
	if !inDLQ(t, s, q, ids[0]) || !inDLQ(t, s, q, ids[1]) {
		t.Fatal("a discard without confirm moved messages")
	}

	var real ops.DLQDiscard
	structured(t, callTool(t, c, "pgbus_dlq_discard", next.Args), &real)
	if real.Discarded != 2 || inDLQ(t, s, q, ids[0]) || inDLQ(t, s, q, ids[1]) {
		t.Fatalf("the dry run's hint, followed = %+v; want both messages discarded", real)
	}
}
