package bouncertest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

// mcpClient is an MCP client connected in process to a server with
// pgbus's tools over st.
func mcpClient(t *testing.T, st *store.Store) *client.Client {
	t.Helper()
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewMCPServer("pgbus", "test", server.WithToolCapabilities(false), server.WithOutputSchemaValidation())
	tools.Register(srv, tools.Deps{Ops: svc}, nil)
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := pgtest.Context(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "bouncertest", Version: "1.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// callOK calls a tool that must succeed and returns its structured result.
func callOK(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(pgtest.Context(t), req)
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if res.IsError {
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				text += tc.Text
			}
		}
		t.Fatalf("%s(%v) through pgbouncer: tool error: %s", name, args, text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out
}

// TestMCPToolsThroughBouncer calls every kind of MCP tool on a server whose
// store reaches PostgreSQL through PgBouncer in transaction mode: reads,
// paging with cursors (signed with a key read from the database), and
// writes that move dead messages.
func TestMCPToolsThroughBouncer(t *testing.T) {
	t.Parallel()
	direct := pgtest.Store(t)
	b := bouncertest.Start(t, pgtest.URL(t))
	st := openStore(t, b.URL())
	q := pgtest.NewQueue(t, direct, "bm")
	pgtest.RestartDLQ(t, direct, q, pgtest.DLQStart()) // ids no other DLQ holds: tools may look them up without queue
	ids := pgtest.DeadLetterN(t, st, q, 30, pgtest.DeadSpec{Kind: "email", Class: "Timeout", Message: "upstream timed out"})
	c := mcpClient(t, st)
	dlq := store.DLQName(q)

	callOK(t, c, "pgbus_health", map[string]any{})
	stats := callOK(t, c, "pgbus_queue_stats", map[string]any{"queue": q})
	if got := at(stats, "queues", 0, "dlq_depth"); got != 30.0 {
		t.Errorf("pgbus_queue_stats: dlq_depth %v, want 30", got)
	}
	sum := callOK(t, c, "pgbus_dlq_summary", map[string]any{"queue": q})
	if got := at(sum, "groups", 0, "count"); got != 30.0 {
		t.Errorf("pgbus_dlq_summary: the group counts %v, want 30", got)
	}
	seen := map[float64]bool{}
	cursor := any(nil)
	for range 3 {
		args := map[string]any{"queue": q, "limit": 10}
		if cursor != nil {
			args["cursor"] = cursor
		}
		page := callOK(t, c, "pgbus_dlq_list", args)
		items, _ := page["items"].([]any)
		for _, it := range items {
			seen[it.(map[string]any)["msg_id"].(float64)] = true
		}
		cursor = page["next_cursor"]
	}
	if len(seen) != 30 {
		t.Errorf("three pages of pgbus_dlq_list showed %d distinct messages, want all 30", len(seen))
	}
	show := callOK(t, c, "pgbus_dlq_show", map[string]any{"queue": dlq, "msg_id": ids[0]})
	if got := at(show, "dead_letter", "error_message"); got != "upstream timed out" {
		t.Errorf("pgbus_dlq_show: error_message %v", got)
	}
	dry := callOK(t, c, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 10, "dry_run": true})
	retried := callOK(t, c, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 10, "expect": dry["expect"]})
	if moved, _ := retried["moved"].([]any); len(moved) != 10 || retried["dry_run"] != false {
		t.Errorf("pgbus_dlq_retry with the dry run's expect moved %d messages, want 10", len(moved))
	}
	discarded := callOK(t, c, "pgbus_dlq_discard", map[string]any{"ids": []int64{ids[29]}})
	if discarded["discarded"] != 1.0 {
		t.Errorf("pgbus_dlq_discard discarded %v, want 1", discarded["discarded"])
	}
	msgs := callOK(t, c, "pgbus_queue_messages", map[string]any{"queue": q})
	if items, _ := msgs["items"].([]any); len(items) != 10 {
		t.Errorf("pgbus_queue_messages shows %d messages, want the 10 retried", len(items))
	}
	if got := callOK(t, c, "pgbus_queue_pause", map[string]any{"queue": q}); got["paused"] != true {
		t.Errorf("pgbus_queue_pause: %v", got)
	}
	if got := callOK(t, c, "pgbus_queue_resume", map[string]any{"queue": q}); got["paused"] != false {
		t.Errorf("pgbus_queue_resume: %v", got)
	}
	callOK(t, c, "pgbus_workers", map[string]any{})
	callOK(t, c, "pgbus_circuits", map[string]any{})
	audit := callOK(t, c, "pgbus_audit", map[string]any{"limit": 5})
	if items, _ := audit["items"].([]any); len(items) == 0 {
		t.Errorf("pgbus_audit through pgbouncer lists no write calls")
	}

	if n := pgtest.Live(t, direct, dlq); n != 19 {
		t.Errorf("%s holds %d messages, want 19 (30 less 10 retried and 1 discarded)", dlq, n)
	}
	if n := pgtest.Live(t, direct, q); n != 10 {
		t.Errorf("%s holds %d messages, want the 10 retried", q, n)
	}
}

// at follows a path of keys and indexes into decoded JSON; nil when it
// leads nowhere.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// TestMCPToolsOfABouncerWithPostgreSQLDown: PgBouncer keeps taking logins
// while the PostgreSQL behind it is down, and fails every statement. The
// health check answers UNREACHABLE, its reason database_unreachable, and
// another tool fails as unavailable, saying PgBouncer cannot reach
// PostgreSQL, as they do with PostgreSQL down and no pooler: never a
// failure that blames a bug.
func TestMCPToolsOfABouncerWithPostgreSQLDown(t *testing.T) {
	t.Parallel()
	_, cluster, direct := pgtest.PrivateStore(t)
	q := pgtest.NewQueue(t, direct, "down")
	b := bouncertest.Start(t, cluster.URL())
	st := openStore(t, b.URL())
	c := mcpClient(t, st)
	callOK(t, c, "pgbus_queue_stats", map[string]any{"queue": q})
	if err := cluster.Stop(pgtest.Context(t)); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second on connections the first left in the pool
		h := callOK(t, c, "pgbus_health", map[string]any{})
		if h["status"] != "UNREACHABLE" || at(h, "reasons", 0, "code") != "database_unreachable" {
			t.Errorf("pgbus_health with PostgreSQL down behind pgbouncer: %v, want UNREACHABLE for database_unreachable", h)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = "pgbus_queue_stats"
		req.Params.Arguments = map[string]any{"queue": q}
		res, err := c.CallTool(pgtest.Context(t), req)
		if err != nil {
			t.Fatal(err)
		}
		var text string
		for _, ct := range res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				text += tc.Text
			}
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if res.Meta != nil {
			raw, _ := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
			_ = json.Unmarshal(raw, &meta)
		}
		if !res.IsError || meta.Kind != "unavailable" || strings.Contains(text, "likely bug") || !strings.Contains(text, "PgBouncer") {
			t.Errorf("pgbus_queue_stats with PostgreSQL down behind pgbouncer: error %v, kind %q, want unavailable, saying PgBouncer cannot reach PostgreSQL: %s", res.IsError, meta.Kind, text)
		}
	}
}
