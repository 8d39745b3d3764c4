package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// On a read-only server over Streamable HTTP, tools/list names no write
// tool, yet a call of one is answered as a tool error that says the server
// is read-only and names the pgbus command an operator can run, with the
// call's own arguments (arguments that cannot be read, or a call no
// server could make, get the error a writable server gives);
// the database, audit log included, is as it was.
func TestReadOnlyWriteCallsNameTheCommand(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	queue, held := newQueue(t, st), newQueue(t, st)
	if _, err := st.SetPaused(ctx, held, true); err != nil {
		t.Fatal(err)
	}
	ids := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`)
	// Discarded ones, which a restore takes: a read-only server checks
	// that the ids it relays are in the archive.
	discarded := deadLetter(t, st, queue, `{"n":3}`, `{"n":4}`)
	if n, err := st.DiscardDead(ctx, store.DLQName(queue), discarded); err != nil || n != 2 {
		t.Fatalf("discard = %d, %v; want 2", n, err)
	}
	breaker := pgtest.Name("http:billing")
	if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if state, err := st.BreakerFailure(ctx, breaker, "503 Service Unavailable"); err != nil || state != store.BreakerOpen {
		t.Fatalf("breaker after a failure: %q, %v; want it open", state, err)
	}
	world := func() string {
		b, err := st.ListBreakers(ctx, breaker)
		if err != nil || len(b) != 1 {
			t.Fatalf("breaker %s: %+v, %v", breaker, b, err)
		}
		return fmt.Sprintf("dead %v %v; paused %v %v; breaker %s; %d audit entries",
			inDLQ(t, st, queue, ids[0]), inDLQ(t, st, queue, ids[1]), paused(t, st, queue), paused(t, st, held),
			b[0].State, pgtest.Int(t, st, `SELECT count(*) FROM pgbus.audit_log`))
	}
	before := world()
	if want := "dead true true; paused false true; breaker open; 0 audit entries"; before != want {
		t.Fatalf("before the calls: %s; want %s", before, want)
	}

	c, err := client.NewStreamableHttpClient(serveHTTP(t, deps(t, st, ops.Options{ReadOnly: true}), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}) + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	names := toolNames(t, c)
	for name, tool := range names {
		if !mcpserver.IsReadOnlyTool(tool) {
			t.Errorf("a read-only server lists the write tool %s", name)
		}
	}
	if _, ok := names["pgbus_dlq_list"]; !ok || len(names) != 10 {
		t.Errorf("a read-only server lists %d tools; want the 10 read tools", len(names))
	}

	dlq := store.DLQName(queue)
	for _, tc := range []struct {
		tool    string
		args    any
		command string
	}{
		{"pgbus_dlq_retry", map[string]any{"ids": ids, "queue": queue}, fmt.Sprintf("pgbus dlq retry %d %d --queue %s", ids[0], ids[1], queue)},
		{"pgbus_dlq_retry", map[string]any{"ids": ids[:1], "queue": dlq, "payload": map[string]any{"n": 3}},
			fmt.Sprintf(`pgbus dlq retry %d --payload '{"n":3}' --queue %s`, ids[0], dlq)},
		// A corrected payload holding a secret stays out of the answer,
		// shown redacted, which the retry refuses: the command says to
		// put the secret back.
		{"pgbus_dlq_retry", map[string]any{"ids": ids[:1], "payload": map[string]any{"password": "hunter2"}},
			fmt.Sprintf(`pgbus dlq retry %d --payload '{"password":"[REDACTED]"}' (the payload here is the corrected one with its 1 secret value shown as [REDACTED], refused as it is: put the real one back, or pass the corrected payload again)`, ids[0])},
		// A retry's or discard's dry run is answered besides
		// (TestReadOnlyAnswersMoveDryRuns), or instead when it would move
		// nothing (TestReadOnlyAnswersDryRunsThatMoveNothing).
		{"pgbus_dlq_discard", map[string]any{"ids": ids[1:], "queue": queue}, fmt.Sprintf("pgbus dlq discard %d --queue %s", ids[1], queue)},
		// A restore's dry run, whose answer the refusal gives besides
		// (TestReadOnlyAnswersRestoreDryRun), names the restore.
		{"pgbus_dlq_restore", map[string]any{"ids": discarded, "queue": queue}, fmt.Sprintf("pgbus dlq restore %d %d --queue %s", discarded[0], discarded[1], queue)},
		{"pgbus_dlq_restore", map[string]any{"ids": discarded, "queue": queue, "dry_run": true}, fmt.Sprintf("pgbus dlq restore %d %d --queue %s", discarded[0], discarded[1], queue)},
		{"pgbus_dlq_purge", map[string]any{"queue": queue, "older_than": "72h", "confirm": true}, fmt.Sprintf("pgbus dlq purge --older-than 3d --queue %s --yes", queue)},
		{"pgbus_queue_pause", map[string]any{"queue": queue}, "pgbus queue pause " + queue},
		{"pgbus_queue_resume", map[string]any{"queue": held}, "pgbus queue resume " + held},
		{"pgbus_queue_run_now", map[string]any{"queue": queue, "dry_run": true}, "pgbus queue run-now " + queue + " --dry-run"},
		{"pgbus_circuit_reset", map[string]any{"name": breaker}, "pgbus circuit reset " + breaker},
		{"pgbus_circuit_open", map[string]any{"name": breaker, "for": "1h30m"}, "pgbus circuit open " + breaker + " --for 1h30m"},
		{"pgbus_circuit_open", map[string]any{"name": breaker, "for": "2h", "reason": "bank's maintenance"}, "pgbus circuit open " + breaker + ` --for 2h --reason 'bank'\''s maintenance'`},
	} {
		res, ok := callForError(ctx, t, c, tc.tool, tc.args)
		if !ok {
			continue
		}
		text := resultText(res)
		if !res.IsError {
			t.Errorf("%s(%v) on a read-only server: %s; want a tool error", tc.tool, tc.args, text)
			continue
		}
		for _, want := range []string{tc.tool + " is not available", "read-only", "nothing was changed", "an operator can run: " + tc.command} {
			if !strings.Contains(text, want) {
				t.Errorf("%s(%v): %q; want it to say %q", tc.tool, tc.args, text, want)
			}
		}
		if !strings.HasSuffix(text, ": "+tc.command) {
			t.Errorf("%s(%v): %q; want it to end with the command %q", tc.tool, tc.args, text, tc.command)
		}
		if strings.Contains(text, "hunter2") {
			t.Errorf("%s(%v): the answer shows a secret of the payload: %q", tc.tool, tc.args, text)
		}
		checkRefusalMeta(t, res, tc.tool, tc.command)
	}
	// Arguments that cannot be read, or make a call no server could make,
	// are answered as a writable server answers them, with what to fix:
	// the bare command they left was another call (a purge's of every DLQ
	// and every age), or one that fails.
	for _, tc := range []struct {
		tool string
		args any
		fix  string
	}{
		{"pgbus_dlq_retry", map[string]any{"ids": "all of them", "queue": queue}, "argument ids must be an array of integers"},
		{"pgbus_dlq_retry", map[string]any{"queue": queue}, "limit is required with filters"},
		{"pgbus_dlq_discard", map[string]any{"ids": ids, "wipe": true}, `unknown argument "wipe"`},
		{"pgbus_dlq_purge", map[string]any{"older_than": "soon"}, `older_than "soon" is not an age`},
		{"pgbus_dlq_purge", map[string]any{"older_than": "30d", "queue": queue, "confirm": true, "extra": 1}, `unknown argument "extra"`},
		{"pgbus_queue_pause", map[string]any{"queue": 42}, "argument queue must be a string"},
		{"pgbus_queue_resume", []any{held}, "arguments must be a JSON object"},
		{"pgbus_queue_run_now", map[string]any{"queue": true}, "argument queue must be a string"},
		{"pgbus_circuit_open", map[string]any{"name": breaker, "for": "a while"}, `for "a while" is not a duration`},
		// Arguments that make no request, as the writable server checks them.
		{"pgbus_circuit_reset", nil, "name is required"},
		{"pgbus_circuit_open", map[string]any{"name": breaker, "for": "30d"}, "for 30d is out of range"},
	} {
		res, ok := callForError(ctx, t, c, tc.tool, tc.args)
		if !ok {
			continue
		}
		if text := resultText(res); !res.IsError || !strings.Contains(text, tc.fix) || strings.Contains(text, "operator can run") {
			t.Errorf("%s(%v) on a read-only server: %q; want the error that says to fix %q", tc.tool, tc.args, text, tc.fix)
		}
	}
	if after := world(); after != before {
		t.Fatalf("a read-only server changed the database:\nbefore: %s\nafter:  %s", before, after)
	}
}

// checkRefusalMeta checks the data of a refusal in its _meta: kind
// read_only and one next step, the command its text ends with (before
// why it is that command), with no secret of the call.
func checkRefusalMeta(t *testing.T, res *mcp.CallToolResult, tool, command string) {
	t.Helper()
	var m struct {
		Kind string `json:"kind"`
		Next []struct {
			Command string `json:"command"`
			Why     string `json:"why"`
		} `json:"next"`
	}
	if res.Meta == nil {
		t.Errorf("%s: the refusal has no _meta", tool)
		return
	}
	raw, _ := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
	if err := json.Unmarshal(raw, &m); err != nil || m.Kind != ops.KindReadOnly || len(m.Next) != 1 || strings.Contains(string(raw), "hunter2") {
		t.Errorf("%s: _meta pgbus/error %s (%v); want kind read_only, one next step and no secret", tool, raw, err)
		return
	}
	if n := m.Next[0]; n.Why == "" || (command != n.Command && !strings.HasPrefix(command, n.Command+" (")) {
		t.Errorf("%s: next step %+v; want the command %q and why", tool, n, command)
	}
}

// callForError calls tool with args, reporting a protocol error, where a
// tool error is wanted, as the test's error; ok is false then.
func callForError(ctx context.Context, t *testing.T, c *client.Client, tool string, args any) (res *mcp.CallToolResult, ok bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Errorf("%s(%v): protocol error %v; want a tool error", tool, args, err)
		return nil, false
	}
	return res, true
}
