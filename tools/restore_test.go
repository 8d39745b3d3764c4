package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An agent undoes a discard: pgbus_dlq_discarded lists the messages with
// the restore to call, pgbus_dlq_restore brings them back with their ids,
// and a second restore says why not.
func TestRestoreUndoesDiscard(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "webhook", Class: "HTTPError"})
	callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", map[string]any{"ids": ids, "queue": q})

	list := callOK[ops.DLQDiscarded](t, e, "pgbus_dlq_discarded", map[string]any{"queue": q, "error_class": "HTTPError"})
	if len(list.Items) != 2 || !list.Items[0].Restorable || list.Items[0].DiscardedAt.IsZero() {
		t.Fatalf("discarded: %+v", list)
	}
	if h, ok := findHint(list.Next, "pgbus_dlq_restore"); !ok || hintArg(h, "dry_run") != "true" {
		t.Fatalf("discarded next: %+v", list.Next)
	}
	dry := callOK[ops.DLQRestore](t, e, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": ids, "dry_run": true})
	if dry.Restored != 2 || pgtest.Live(t, e.st, q+"_dlq") != 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	rep := callOK[ops.DLQRestore](t, e, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": ids})
	if rep.Restored != 2 || rep.Outcomes[0].Outcome != ops.OutcomeRestored || pgtest.Live(t, e.st, q+"_dlq") != 2 {
		t.Fatalf("restore: %+v", rep)
	}
	if h, ok := findHint(rep.Next, "pgbus_dlq_list"); !ok || hintArg(h, "queue") != `"`+q+`"` {
		t.Errorf("restore next: %+v", rep.Next)
	}
	again := callOK[ops.DLQRestore](t, e, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": ids[:1]})
	if again.NotFound != 1 || !strings.Contains(again.FirstError, "restored already") {
		t.Fatalf("restore again: %+v", again)
	}
	if _, ok := findHint(again.Next, "pgbus_dlq_discarded"); !ok {
		t.Errorf("restore again next: %+v", again.Next)
	}
}

// Bad arguments are tool errors that say what to do, and a read-only
// server has no pgbus_dlq_restore but keeps pgbus_dlq_discarded.
func TestRestoreBadInputAndReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	e.callErr(t, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": []any{"one"}})
	e.callErr(t, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": []any{1e30}})
	e.callErr(t, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": []int64{}})
	e.callErr(t, "pgbus_dlq_restore", map[string]any{"ids": []int64{1}})
	e.callErr(t, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": []int64{0}}, "positive", "pgbus_dlq_discarded")
	e.callErr(t, "pgbus_dlq_restore", map[string]any{"queue": uniqueName("nosuch"), "ids": []int64{1}}, "has no dead-letter queue", "pgbus_queue_stats")
	e.callErr(t, "pgbus_dlq_discarded", map[string]any{"queue": q, "limit": 0})

	ro := newEnvOn(t, e.st, ops.Options{ReadOnly: true})
	listed, err := ro.c.ListTools(testContext(t), mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range listed.Tools {
		names[tool.Name] = true
	}
	if names["pgbus_dlq_restore"] || !names["pgbus_dlq_discarded"] {
		t.Fatalf("read-only tools %v: want pgbus_dlq_discarded and no pgbus_dlq_restore", names)
	}
	// Relayed for an id in the archive; refused, as not there, for one
	// that is not.
	id := pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: "k"})[0]
	callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", map[string]any{"queue": q, "ids": []int64{id}})
	ro.callErr(t, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": []int64{id}}, fmt.Sprintf("pgbus dlq restore %d --queue %s", id, q))
	ro.callErr(t, "pgbus_dlq_restore", map[string]any{"queue": q, "ids": []int64{id + 1}}, fmt.Sprintf("message %d is not in the archive of %s_dlq", id+1, q))
}
