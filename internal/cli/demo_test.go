package cli_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// The README's quick start, literally: pgbus demo on a machine with nothing
// running (a fresh embedded cluster), then what its output tells to do
// next: look at the summary, retry the outage's victims, work the queue.
func TestQuickStartDemo(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "pgbus-demo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d := db{env: []string{"PGBUS_DATA_DIR=" + dir}}

	started := time.Now()
	out := d.ok(t, "demo")
	t.Logf("pgbus demo took %s", time.Since(started).Round(time.Millisecond))
	for _, s := range []string{
		"pgbus demo on embedded PostgreSQL in " + dir,
		"all 347 jobs settled",
		"Queues (pgbus queues):", "QUEUE", "DEPTH", "demo_orders", "demo_emails",
		"Dead letters (pgbus dlq summary):", "ERROR CLASS", "demo.Unavailable", "demo.ValidationError",
		"context.DeadlineExceeded", "deadline_exceeded", "dead messages in 5 groups",
		"pgbus dlq retry-all --queue demo_orders --error-class demo.Unavailable --yes",
		"Connect an AI agent", "pgbus serve", `in claude_desktop_config.json or .cursor/mcp.json:
    {"mcpServers":{"pgbus":{"command":"pgbus",`, `in .vscode/mcp.json:
    {"servers":{"pgbus":{"type":"stdio","command":"pgbus",`, "export PGBUS_DATA_DIR=" + dir,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("demo output lacks %q", s)
		}
	}
	if t.Failed() {
		t.Fatalf("demo output:\n%s", out)
	}

	// The summary groups at least three distinct causes.
	var groups []store.DeadGroup
	d.json(t, &groups, "dlq", "summary")
	causes := map[string]int64{}
	var dead int64
	for _, g := range groups {
		causes[g.SourceQueue+" "+g.ErrorClass+" "+strings.Join(g.Reasons, ",")] += g.Count
		dead += g.Count
	}
	if len(causes) < 3 || dead != 27 {
		t.Fatalf("summary: %d causes, %d dead: %v", len(causes), dead, causes)
	}
	outage := causes["demo_orders demo.Unavailable max_retries_exceeded"]
	if outage != 12 || causes["demo_orders demo.ValidationError non_retryable_error"] != 6 ||
		causes["demo_emails context.DeadlineExceeded max_retries_exceeded"] != 4 || causes["demo_emails  deadline_exceeded"] != 3 {
		t.Fatalf("causes: %v", causes)
	}
	// Ids are per queue: id 1 is dead in both demo DLQs.
	if msg := d.fails(t, 2, "dlq", "show", "1"); !strings.Contains(msg, "pass --queue") {
		t.Errorf("ambiguous id: %q", msg)
	}
	var stats []store.QueueStats
	d.json(t, &stats, "queues", "demo_orders")
	ordersDead, ordersArchived := stats[0].DLQDepth, stats[0].Archived

	// Retry everything dead in demo_orders: the transient ones succeed now,
	// the rest die again.
	var rep store.RetryReport
	d.json(t, &rep, "dlq", "retry-all", "--queue", "demo_orders", "--yes")
	if rep.Retried != int(ordersDead) || rep.Failed != 0 {
		t.Fatalf("retry-all: %+v, want %d retried", rep, ordersDead)
	}
	d.ok(t, "work", "--queue", "demo_orders", "--handler", "demo", "--until-idle")
	d.json(t, &stats, "queues", "demo_orders")
	if s := stats[0]; s.Depth != 0 || s.Archived != ordersArchived+outage || s.DLQDepth != ordersDead-outage {
		t.Fatalf("after retry-all and work: depth %d, archived %d (was %d), dead %d (was %d)", s.Depth, s.Archived, ordersArchived, s.DLQDepth, ordersDead)
	}
	d.json(t, &groups, "dlq", "summary", "--queue", "demo_orders")
	for _, g := range groups {
		if g.ErrorClass == "demo.Unavailable" {
			t.Fatalf("transient failures still dead: %+v", g)
		}
	}

	// Run again: it starts over, with the same result.
	out = d.ok(t, "demo")
	if !strings.Contains(out, "all 347 jobs settled") || !strings.Contains(out, "27 dead-lettered") || !strings.Contains(out, "dead messages in 5 groups") {
		t.Fatalf("second demo:\n%s", out)
	}
	d.json(t, &stats, "queues")
	for _, s := range stats {
		if s.TotalSent != map[string]int64{"demo_orders": 240, "demo_emails": 107}[s.Queue] {
			t.Errorf("second run: %s sent %d", s.Queue, s.TotalSent)
		}
	}
	var m store.DeadMessage
	d.json(t, &m, "dlq", "show", "1", "--queue", "demo_emails")
	if len(m.History) > 4 {
		t.Errorf("a dead message of the second run carries %d failures: history from the first run leaked", len(m.History))
	}
}
