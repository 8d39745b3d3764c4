package tools_test

import (
	"reflect"
	"testing"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// NameHints names every hint in a result as the tool that does it, at any
// depth; an operation no tool does becomes the command for an operator.
func TestNameHints(t *testing.T) {
	t.Parallel()
	h := ops.Health{Reasons: []ops.HealthReason{{Code: "no_workers", Next: []ops.Hint{
		{Op: ops.OpWork, Args: map[string]any{"queue": "orders"}, Why: "start workers"},
		{Op: ops.OpWorkers, Why: "shows the processes"},
	}}}}
	tools.NameHints(reflect.ValueOf(&h), tools.Deps{})
	next := h.Reasons[0].Next
	if next[1].Op != "pgbus_workers" || next[1].Why != "shows the processes" {
		t.Errorf("a hint of a tool's operation: %+v", next[1])
	}
	if next[0].Op != "cli" || next[0].Args["command"] != "pgbus work --queue orders" || len(next[0].Args) != 1 {
		t.Errorf("a hint of an operation no tool does: %+v", next[0])
	}

	r := ops.DLQRetry{Next: []ops.Hint{{Op: ops.OpDLQList, Args: map[string]any{"queue": "orders"}}}}
	tools.NameHints(reflect.ValueOf(&r), tools.Deps{})
	if r.Next[0].Op != "pgbus_dlq_list" || r.Next[0].Args["queue"] != "orders" {
		t.Errorf("retry next: %+v", r.Next)
	}
}

// A command relayed to an operator carries the global flags the server
// was started with: without its --config, pgbus work would start without
// the configured handlers, and without its --data-dir against another
// database.
func TestNameHintsCarryServerFlags(t *testing.T) {
	t.Parallel()
	h := ops.Health{Reasons: []ops.HealthReason{{Code: "no_workers", Next: []ops.Hint{
		{Op: ops.OpWork, Args: map[string]any{"queue": "orders"}},
		{Op: ops.OpWorkers},
	}}}}
	tools.NameHints(reflect.ValueOf(&h), tools.Deps{CommandFlags: " --config /etc/pgbus.yaml"})
	next := h.Reasons[0].Next
	if got := next[0].Args["command"]; got != "pgbus work --queue orders --config /etc/pgbus.yaml" {
		t.Errorf("relayed command = %q, want it with the server's --config", got)
	}
	if next[1].Op != "pgbus_workers" || len(next[1].Args) != 0 {
		t.Errorf("a tool call took the server's flags: %+v", next[1])
	}
}
