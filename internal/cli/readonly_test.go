package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// deadIDs returns the ids in DLQ shop_dlq, newest first as dlq list
// orders them.
func (d db) deadIDs(t *testing.T) []int64 {
	t.Helper()
	var ids []int64
	d.query(t, `SELECT coalesce(array_agg(msg_id ORDER BY enqueued_at DESC, msg_id DESC), '{}') FROM pgmq.q_shop_dlq`, &ids)
	return ids
}

// A role with LOGIN, USAGE on schemas pgmq and pgbus and SELECT on their
// tables, and nothing else, runs every read command and pgbus serve
// --read-only against a database its owner migrated, and writes nothing;
// a write command fails saying which privileges it lacks, and moves nothing.
func TestReadOnlyRole(t *testing.T) {
	t.Parallel()
	owner := newDB(t)
	deadShop(t, owner) // queue shop with 7 dead messages, all by the CLI
	owner.ok(t, "queue", "create", "idle")
	owner.ok(t, "send", "idle", `{"n": 1}`)

	role, roleURL := pgtest.NewRole(t, owner.url)
	pgtest.Exec(t, owner.url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, owner.url, "GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	reader := db{url: roleURL, env: []string{"DATABASE_URL=" + roleURL}}
	var user string
	reader.query(t, `SELECT current_user::text`, &user)
	if user != role {
		t.Fatalf("the reader's URL connects as %q, not %q", user, role)
	}

	state := func() string {
		return owner.snapshot(t) + fmt.Sprintf(" workers=%d dlq_groups=%d stats=%d",
			owner.count(t, `SELECT count(*) FROM pgbus.workers`),
			owner.count(t, `SELECT coalesce(sum(count), 0) FROM pgbus.dlq_group_counts`),
			owner.count(t, `SELECT count(*) FROM pgbus.stats_minute`))
	}
	before := state()
	dead := owner.deadIDs(t)
	if len(dead) != 7 {
		t.Fatalf("the owner's setup left %d dead messages in shop_dlq, want 7", len(dead))
	}

	// pgbus queues
	var res ops.QueueStatsResult
	reader.json(t, &res, "queues")
	stats := res.Queues
	byQueue := map[string]ops.QueueStats{}
	for _, s := range stats {
		byQueue[s.Queue] = s
	}
	if s := byQueue["shop"]; len(stats) != 2 || s.Depth != 0 || s.DLQ != "shop_dlq" || s.DLQDepth != 7 || s.Settings.MaxRetries != 2 {
		t.Fatalf("queues as the reader: %+v", stats)
	}
	if s := byQueue["idle"]; s.Depth != 1 || s.Visible != 1 || s.DLQDepth != 0 || s.TotalSent != 1 {
		t.Fatalf("queue idle as the reader: %+v", s)
	}

	// pgbus dlq summary
	var sum ops.DLQSummary
	reader.json(t, &sum, "dlq", "summary")
	groups := sum.Groups
	counts := map[string]int64{}
	var sampled []int64
	for _, g := range groups {
		if g.DLQ != "shop_dlq" || g.SourceQueue != "shop" {
			t.Errorf("group %+v", g)
		}
		counts[g.ErrorClass] = g.Count
		sampled = append(sampled, g.SampleMsgIDs...)
	}
	if len(groups) != 3 || counts["demo.ValidationError"] != 3 || counts["panic"] != 2 || counts["demo.Unavailable"] != 2 {
		t.Fatalf("summary as the reader: %+v", groups)
	}
	slices.Sort(sampled)
	if want := slices.Sorted(slices.Values(dead)); !slices.Equal(sampled, want) {
		t.Fatalf("summary sample ids %v, want every dead id %v", sampled, want)
	}

	// pgbus dlq list
	var page ops.DLQList
	reader.json(t, &page, "dlq", "list")
	var listed []int64
	for _, it := range page.Items {
		listed = append(listed, it.MsgID)
	}
	if !slices.Equal(listed, dead) || page.NextCursor != "" {
		t.Fatalf("list as the reader: ids %v (cursor %q), want %v", listed, page.NextCursor, dead)
	}
	reader.json(t, &page, "dlq", "list", "--error-class", "demo.Unavailable")
	if len(page.Items) != 2 || page.Items[0].Reason != store.ReasonMaxRetriesExceeded {
		t.Fatalf("filtered list as the reader: %+v", page.Items)
	}
	outage := page.Items[0].MsgID

	// pgbus dlq show ID
	var m ops.DeadMessage
	reader.json(t, &m, "dlq", "show", fmt.Sprint(outage))
	if m.DLQ != "shop_dlq" || m.MsgID != outage || m.Kind != "charge" || m.DeadLetter == nil ||
		m.DeadLetter.ErrorClass != "demo.Unavailable" || m.DeadLetter.SourceQueue != "shop" || len(m.History) != 2 {
		t.Fatalf("show %d as the reader: %+v", outage, m)
	}

	// pgbus dlq discarded: the archive reads as the DLQ does.
	var discarded ops.DLQDiscarded
	reader.json(t, &discarded, "dlq", "discarded", "--queue", "shop")
	if len(discarded.Items) != 0 || discarded.Notes == nil {
		t.Fatalf("discarded as the reader: %+v, want none (nothing was discarded)", discarded)
	}

	// pgbus audit: the owner's writes, as the owner would see them.
	var audit ops.AuditPage
	reader.json(t, &audit, "audit", "--tool", "all", "--limit", "100")
	if n := owner.count(t, `SELECT count(*) FROM pgbus.audit_log WHERE NOT pending`); len(audit.Items) != n || n < 10 {
		t.Fatalf("audit as the reader: %d entries, the table has %d", len(audit.Items), n)
	}

	// pgbus serve --read-only, over stdio, with the workers' configuration
	// file: --no-workers leaves its queues to the workers.
	cfg := writeFile(t, "workers.yaml", "queues:\n  shop:\n    handler: {type: demo}\n")
	c, _, stderr := serveStdio(t, "--read-only", "--no-workers", "--config", cfg, "--database-url", roleURL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var toolPage struct {
		Items []ops.DeadItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(toolText(callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": "shop"}))), &toolPage); err != nil {
		t.Fatal(err)
	}
	listed = listed[:0]
	for _, it := range toolPage.Items {
		listed = append(listed, it.MsgID)
	}
	if !slices.Equal(listed, dead) || toolPage.Items[0].SourceQueue != "shop" || toolPage.Items[0].ErrorClass == "" {
		t.Fatalf("pgbus_dlq_list as the reader: %+v, want ids %v", toolPage.Items, dead)
	}
	// Every other read tool, and the resources, answer the reader too.
	for name, args := range map[string]map[string]any{
		"pgbus_health":         {},
		"pgbus_queue_stats":    {},
		"pgbus_dlq_summary":    {},
		"pgbus_dlq_show":       {"queue": "shop", "msg_id": outage},
		"pgbus_queue_messages": {"queue": "idle"},
		"pgbus_workers":        {},
		"pgbus_circuits":       {},
		"pgbus_audit":          {},
		"pgbus_dlq_discarded":  {"queue": "shop"},
	} {
		callTool(t, c, name, args)
	}
	for _, uri := range []string{"pgbus://queues", "pgbus://queues/shop/stats", fmt.Sprintf("pgbus://dlq/shop/%d", outage)} {
		rr := mcp.ReadResourceRequest{}
		rr.Params.URI = uri
		if res, err := c.ReadResource(ctx, rr); err != nil || len(res.Contents) == 0 {
			t.Fatalf("read %s as the reader: %v", uri, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	if after := state(); after != before {
		t.Fatalf("read commands as the reader changed the database:\n%s\n%s\nserve's stderr: %s", before, after, stderr.String())
	}

	// A write command checks the schema, then fails on the first write,
	// saying what the role lacks; nothing moved.
	msg := reader.fails(t, 1, "dlq", "retry", fmt.Sprint(outage), "--queue", "shop")
	for _, s := range []string{"permission denied", "the database role " + role + " lacks a privilege", "trying again will not help", "INSERT, UPDATE, DELETE ON ALL TABLES"} {
		if !strings.Contains(msg, s) {
			t.Errorf("retry as the reader: stderr lacks %q:\n%s", s, msg)
		}
	}
	if strings.Contains(msg, "pgbus migrate") {
		t.Errorf("retry as the reader blames the schema:\n%s", msg)
	}
	if after := state(); after != before {
		t.Fatalf("a refused retry changed the database:\n%s\n%s", before, after)
	}
	if ids := owner.deadIDs(t); !slices.Equal(ids, dead) {
		t.Fatalf("after a refused retry shop_dlq holds %v, want %v", ids, dead)
	}
	// So does a restore, whose ids need not even be discarded to be
	// refused.
	msg = reader.fails(t, 1, "dlq", "restore", fmt.Sprint(outage), "--queue", "shop")
	if !strings.Contains(msg, "permission denied") || !strings.Contains(msg, "INSERT, UPDATE, DELETE ON ALL TABLES") {
		t.Errorf("restore as the reader: stderr lacks the privileges it needs:\n%s", msg)
	}
	if after := state(); after != before {
		t.Fatalf("a refused restore changed the database:\n%s\n%s", before, after)
	}
}

// On a database pgbus migrate never ran on, the commands that need no DDL
// fail with a message to run it, exit 1, and create nothing, even for a
// role that could have migrated. pgbus serve --read-only, which answers
// its MCP client meanwhile, says the same in its log (pgbus dashboard
// --read-only on its pages: TestDashboardServesWhileTheSchemaIsNotReady).
func TestCommandsOnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, args := range [][]string{
		{"dlq", "list"},
		{"dlq", "summary"},
		{"dlq", "show", "1"},
		{"dlq", "retry", "1"},
		{"queues"},
		{"audit"},
		{"send", "orders", "{}"},
		{"queue", "pause", "orders"},
		{"queue", "messages", "orders"},
		{"health"},
		{"workers"},
		{"circuits"},
		{"circuit", "reset", "api"},
	} {
		msg := d.fails(t, 1, args...)
		if !strings.Contains(msg, "the database has no pgbus schema") || !strings.Contains(msg, ": see pgbus migrate") {
			t.Errorf("pgbus %s: stderr does not say to run pgbus migrate:\n%s", strings.Join(args, " "), msg)
		}
	}
	// Its client closed stdin at once.
	if r := pgbus(t, d.env, "serve", "--read-only"); r.code != 0 || !strings.Contains(r.stderr, "the database has no pgbus schema") || !strings.Contains(r.stderr, ": see pgbus migrate") {
		t.Errorf("pgbus serve --read-only: exit %d; want 0, its log saying to run pgbus migrate:\n%s", r.code, r.stderr)
	}
	// With --json, the step is the error's next, as a script reads it.
	r := pgbus(t, d.env, "dlq", "list", "--json")
	if e := decodeErrorJSON(t, r); e.Kind != "schema" || len(e.Next) != 1 || !strings.HasPrefix(e.Next[0].Command, "pgbus migrate") {
		t.Errorf("dlq list --json on an unmigrated database: %+v; want kind schema and next pgbus migrate", e)
	}
	if n := d.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('pgbus', 'pgmq')`); n != 0 {
		t.Fatalf("the commands created %d of the schemas pgbus and pgmq", n)
	}
	d.ok(t, "migrate")
	if out := d.ok(t, "dlq", "list"); !strings.Contains(out, "no dead messages") {
		t.Errorf("dlq list after migrate: %q", out)
	}
}
