package tools_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

func TestCircuitsAndReset(t *testing.T) {
	e := newEnv(t, tools.Deps{})
	ctx := testContext(t)
	name := uniqueName("http_bank")
	if err := e.st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.BreakerFailure(ctx, name, "503 from the bank"); err != nil {
		t.Fatal(err)
	}
	out := callOK[tools.CircuitsOutput](t, e, "pgbus_circuits", map[string]any{})
	var found *store.BreakerState
	for i := range out.Circuits {
		if out.Circuits[i].Name == name {
			found = &out.Circuits[i]
		}
	}
	if found == nil || found.State != store.BreakerOpen || found.LastError != "503 from the bank" || out.Open < 1 {
		t.Fatalf("circuits = %+v; want %s open with its last error", out, name)
	}
	reset := callOK[tools.CircuitResetOutput](t, e, "pgbus_circuit_reset", map[string]any{"name": name})
	if reset.State != store.BreakerClosed {
		t.Fatalf("reset = %+v", reset)
	}
	v, err := e.st.AcquireBreaker(ctx, name, time.Second)
	if err != nil || !v.Allowed {
		t.Fatalf("after reset the breaker lets calls through: %+v, %v", v, err)
	}
	e.callErr(t, "pgbus_circuit_reset", map[string]any{"name": "no_such_" + name}, "does not exist")
	e.callErr(t, "pgbus_circuit_reset", map[string]any{}, "name is required")
	e.callErr(t, "pgbus_circuit_reset", map[string]any{"name": 42}, "name")
	if rows := auditRows(t, e.st, "pgbus_circuit_reset", name); len(rows) < 1 {
		t.Fatalf("reset not audited: %+v", rows)
	}
}
