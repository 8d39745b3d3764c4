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

// pgbus_circuit_open opens a breaker by hand for the time given, audited
// with the client's name; a missing, mistyped or out-of-range for, a
// missing, huge or injected name and an unknown argument are tool errors
// saying what to pass, which change nothing.
func TestCircuitOpenTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	ctx := testContext(t)
	name := uniqueName("http_maint")
	if err := e.st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 3, CoolOff: time.Second, MaxCoolOff: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args map[string]any
		says string
	}{
		{map[string]any{"name": name}, "for is required"},
		{map[string]any{"name": name, "for": 30}, "for"},
		{map[string]any{"name": name, "for": "soon"}, `for "soon" is not a duration`},
		{map[string]any{"name": name, "for": "0s"}, "1s to 7d"},
		{map[string]any{"name": name, "for": "200h"}, "1s to 7d, such as 30m"},
		{map[string]any{"name": name, "for": "8d"}, "1s to 7d, such as 30m"},
		{map[string]any{"name": name, "for": "-1h"}, `for "-1h" is not a duration`},
		{map[string]any{"for": "1h"}, "name is required"},
		{map[string]any{}, "name and for are required"},
		{map[string]any{"name": strings.Repeat("x", 100_000), "for": "1h"}, "at most 10240"},
		{map[string]any{"name": strings.Repeat("x", 300), "for": "1h"}, "no breaker has a name over 200"},
		{map[string]any{"name": "x'); DROP TABLE pgbus.circuit_breakers; -- " + name, "for": "1h"}, "does not exist"},
		{map[string]any{"name": name, "for": "1h", "until": "tomorrow"}, "until"},
		{map[string]any{"name": name, "for": "1h", "reason": 42}, "reason"},
		{map[string]any{"name": name, "for": "1h", "reason": strings.Repeat("r", 600)}, "reason is 600 bytes long; give at most 500"},
		{map[string]any{"name": name, "for": "1h", "reason": strings.Repeat("r", 100_000)}, "at most 10240"},
		{map[string]any{"name": name, "for": "1h", "reason": "a\x00b"}, "reason cannot be used"},
	} {
		e.callErr(t, "pgbus_circuit_open", c.args, c.says)
	}
	if st, err := e.st.ListBreakers(ctx, name); err != nil || len(st) != 1 || st[0].State != store.BreakerClosed {
		t.Fatalf("breaker after refused calls: %+v, %v; want it closed still", st, err)
	}
	out := callOK[ops.CircuitOpen](t, e, "pgbus_circuit_open", map[string]any{"name": name, "for": "45m", "reason": "bank maintenance, OPS-7"})
	if out.State != store.BreakerOpen || out.Was != store.BreakerClosed || out.OpenUntil.Before(time.Now().Add(44*time.Minute)) || out.OpenUntil.After(time.Now().Add(46*time.Minute)) ||
		!strings.HasPrefix(out.OpenedByHand.By, "mcp:") || out.OpenedByHand.Reason != "bank maintenance, OPS-7" {
		t.Fatalf("open = %+v; want it open for 45 minutes, by this client, with its reason", out)
	}
	// Another agent that looks at the breaker is told a person opened it,
	// and cannot reset it without saying it ends that window.
	cs := callOK[ops.Circuits](t, e, "pgbus_circuits", map[string]any{"name": name})
	if len(cs.Circuits) != 1 || cs.Circuits[0].OpenedByHand == nil || cs.Circuits[0].OpenedByHand.By != out.OpenedByHand.By || cs.Circuits[0].OpenedByHand.Reason != "bank maintenance, OPS-7" {
		t.Fatalf("circuits = %+v; want the opening by hand, who and why", cs)
	}
	e.callErr(t, "pgbus_circuit_reset", map[string]any{"name": name}, "was opened by hand by "+out.OpenedByHand.By)
	e.callErr(t, "pgbus_circuit_reset", map[string]any{"name": name, "end_opening_by_hand": "yes"}, "end_opening_by_hand")
	if st, err := e.st.ListBreakers(ctx, name); err != nil || st[0].State != store.BreakerOpen {
		t.Fatalf("breaker after the refused resets: %+v, %v; want it open still", st, err)
	}
	reset := callOK[ops.CircuitReset](t, e, "pgbus_circuit_reset", map[string]any{"name": name, "end_opening_by_hand": true})
	if reset.State != store.BreakerClosed || reset.WasOpenedByHand == nil || reset.WasOpenedByHand.Reason != "bank maintenance, OPS-7" {
		t.Fatalf("reset ending the opening by hand = %+v; want it closed, the opening it ended said", reset)
	}
	if h, ok := findHint(out.Next, "pgbus_circuit_reset"); !ok || h.Args["name"] != name {
		t.Errorf("open next = %+v; want the reset of %s", out.Next, name)
	}
	// The opening is audited, and so is the call on a missing breaker,
	// which reached the database; the refused calls are not.
	if rows := auditRows(t, e.st, "circuit_open", `"`+name+`"`); len(rows) != 1 || rows[0].IsError || !strings.Contains(string(rows[0].Arguments), `"for": "45m"`) ||
		!strings.Contains(string(rows[0].Arguments), `"reason": "bank maintenance, OPS-7"`) {
		t.Fatalf("audit of the opening: %+v; want it alone, for 45m", rows)
	}
	if rows := auditRows(t, e.st, "circuit_open", "DROP TABLE pgbus.circuit_breakers; -- "+name); len(rows) != 1 || !rows[0].IsError {
		t.Fatalf("audit of the opening of a missing breaker: %+v; want it, as an error", rows)
	}
	// Days, as every other age an agent gives.
	day := callOK[ops.CircuitOpen](t, e, "pgbus_circuit_open", map[string]any{"name": name, "for": "1d"})
	if day.OpenUntil.Before(time.Now().Add(23*time.Hour)) || day.OpenUntil.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("open for 1d = %+v; want it open for a day", day)
	}
}
