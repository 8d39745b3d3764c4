package tools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestCircuitsAndReset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	ctx := testContext(t)
	name := uniqueName("http_bank")
	if err := e.st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.BreakerFailure(ctx, name, "503 from the bank (token=tk_9f8e7d6c)"); err != nil {
		t.Fatal(err)
	}
	out := callOK[ops.Circuits](t, e, "pgbus_circuits", map[string]any{"name": name})
	var found *ops.BreakerState
	for i := range out.Circuits {
		if out.Circuits[i].Name == name {
			found = &out.Circuits[i]
		}
	}
	if found == nil || len(out.Circuits) != 1 || found.State != store.BreakerOpen || found.LastError != "503 from the bank (token=[REDACTED])" || out.Open != 1 {
		t.Fatalf("circuits = %+v; want %s open with its last error, the token redacted", out, name)
	}
	// A job it held shows so in the queue's messages, which offer the reset.
	q := newQueue(t, e.st)
	held := pgtest.Held(t, e.st, q, name)
	live := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q})
	if len(live.Items) != 1 || live.Items[0].MsgID != held || live.Items[0].State != store.StateScheduled || live.Items[0].HeldBy != name {
		t.Fatalf("queue messages = %+v; want message %d scheduled, held by %s", live.Items, held, name)
	}
	if h, ok := findHint(live.Next, "pgbus_circuit_reset"); !ok || h.Args["name"] != name {
		t.Fatalf("queue messages next = %+v; want the reset of %s", live.Next, name)
	}
	if cs := callOK[ops.Circuits](t, e, "pgbus_circuits", map[string]any{"name": name}); len(cs.Circuits) != 1 || cs.Circuits[0].Held != 1 {
		t.Fatalf("circuits = %+v; want the breaker holding 1 job", cs)
	}
	reset := callOK[ops.CircuitReset](t, e, "pgbus_circuit_reset", map[string]any{"name": name})
	if reset.State != store.BreakerClosed || reset.Name != name || reset.Was != store.BreakerOpen || !reset.Changed || reset.Released != 1 {
		t.Fatalf("reset = %+v; want it closed, said to have been open, and the job it held made visible", reset)
	}
	if live := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q}); len(live.Items) != 1 || live.Items[0].State != store.StateWaiting {
		t.Fatalf("queue messages after the reset = %+v; want the job waiting", live.Items)
	}
	if again := callOK[ops.CircuitReset](t, e, "pgbus_circuit_reset", map[string]any{"name": name}); again.Changed || again.Was != store.BreakerClosed {
		t.Fatalf("second reset = %+v; want it to say nothing changed", again)
	}
	if _, ok := findHint(reset.Next, "pgbus_circuits"); !ok {
		t.Errorf("reset next %+v does not point at pgbus_circuits", reset.Next)
	}
	v, err := e.st.AcquireBreaker(ctx, name, time.Second)
	if err != nil || !v.Allowed {
		t.Fatalf("after reset the breaker lets calls through: %+v, %v", v, err)
	}
	e.callErr(t, "pgbus_circuits", map[string]any{"name": "no_such_" + name}, "no circuit breaker is named")
	e.callErr(t, "pgbus_circuits", map[string]any{"name": 42}, "name")
	e.callErr(t, "pgbus_circuit_reset", map[string]any{"name": "no_such_" + name}, "does not exist")
	e.callErr(t, "pgbus_circuit_reset", map[string]any{}, "name is required")
	e.callErr(t, "pgbus_circuit_reset", map[string]any{"name": 42}, "name")
	// The reset and the reset of a missing breaker are audited; the calls
	// rejected as invalid are not.
	rows := auditRows(t, e.st, "circuit_reset", name)
	if len(rows) != 3 || !rows[0].IsError || rows[1].IsError || rows[2].IsError || !strings.Contains(string(rows[0].Arguments), "no_such_"+name) {
		t.Fatalf("audit of resets: %+v", rows)
	}
}
