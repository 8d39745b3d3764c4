package tools_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// TestAuditRecordsNoNextSteps checks that the audit log, a record of who
// did what, holds no next steps: those were advice at the time of the
// call, named in the operations layer's words, and read back they would
// name operations no tool calls (circuits, work), writes a read-only
// server refuses, or steps long stale. Entries recorded with next steps
// before are read without them too.
func TestAuditRecordsNoNextSteps(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "webhook", Class: "HTTPError", Message: "http 503"})
	breaker := uniqueName("brk")
	ctx := testContext(t)
	if err := e.st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 3, CoolOff: time.Second, MaxCoolOff: time.Minute}); err != nil {
		t.Fatal(err)
	}

	callOK[map[string]any](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
	callOK[map[string]any](t, e, "pgbus_queue_resume", map[string]any{"queue": q})
	callOK[map[string]any](t, e, "pgbus_circuit_open", map[string]any{"name": breaker, "for": "30m"})
	callOK[map[string]any](t, e, "pgbus_circuit_reset", map[string]any{"name": breaker, "end_opening_by_hand": true})
	callOK[map[string]any](t, e, "pgbus_dlq_retry", map[string]any{"ids": []int64{ids[0]}, "queue": q})
	callOK[map[string]any](t, e, "pgbus_dlq_discard", map[string]any{"ids": []int64{ids[1]}, "queue": q})
	callOK[map[string]any](t, e, "pgbus_queue_run_now", map[string]any{"queue": q})

	// An entry as an older pgbus recorded it, with the hints of its
	// result in the operations layer's names, and one with next null.
	old := []store.AuditEntry{
		{Client: "old-agent/1.0", Transport: "stdio", Tool: ops.OpCircuitReset, Arguments: json.RawMessage(`{"name":"` + breaker + `"}`),
			Result: json.RawMessage(`{"name":"` + breaker + `","reset":true,"next":[{"op":"circuits","why":"lists the breakers"},{"op":"work","args":{"needs_handler":true,"queue":"` + q + `"},"why":"starts a worker"}]}`)},
		{Client: "old-agent/1.0", Transport: "stdio", Tool: ops.OpDLQRetry, Arguments: json.RawMessage(`{"ids":[1]}`),
			Result: json.RawMessage(`{"retried":1,"next":null}`)},
	}
	if err := e.st.RecordAudits(ctx, old); err != nil {
		t.Fatal(err)
	}

	list, err := e.c.ListTools(ctx, mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	toolNames := map[string]bool{}
	for _, tl := range list.Tools {
		toolNames[tl.Name] = true
	}

	page := callOK[ops.AuditPage](t, e, "pgbus_audit", map[string]any{"tool": "all", "limit": 100})
	seen := map[string]bool{}
	for _, it := range page.Items {
		seen[it.Op] = true
		var result any
		if err := json.Unmarshal(it.Result, &result); err != nil {
			t.Fatalf("entry %d (%s): result is not JSON: %v: %s", it.ID, it.Op, err, it.Result)
		}
		walkJSON(result, func(obj map[string]any) {
			if _, ok := obj["next"]; ok {
				t.Errorf("entry %d (%s, %s): result holds next steps: %s", it.ID, it.Op, it.Client, it.Result)
			}
			if op, ok := obj["op"].(string); ok && !toolNames[op] {
				t.Errorf("entry %d (%s, %s): result holds a hint naming %q, which is no tool: %s", it.ID, it.Op, it.Client, op, it.Result)
			}
		})
	}
	for _, op := range []string{ops.OpQueuePause, ops.OpQueueResume, ops.OpCircuitOpen, ops.OpCircuitReset, ops.OpDLQRetry, ops.OpDLQDiscard, ops.OpQueueRunNow} {
		if !seen[op] {
			t.Errorf("no audit entry of %s in %d entries", op, len(page.Items))
		}
	}
	// What the call did stays recorded: the old reset's own fields.
	for _, it := range page.Items {
		if it.Client == "old-agent/1.0" && it.Op == ops.OpCircuitReset && !strings.Contains(string(it.Result), `"reset":true`) {
			t.Errorf("old entry lost its result: %s", it.Result)
		}
	}
}

// walkJSON calls f on every object in v.
func walkJSON(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, c := range x {
			walkJSON(c, f)
		}
	case []any:
		for _, c := range x {
			walkJSON(c, f)
		}
	}
}
