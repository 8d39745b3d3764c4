package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus queue run-now makes a queue's retrying messages visible now, after
// a --dry-run that only counts them, --json as the result is; a DLQ's name
// is a usage error and a queue that does not exist is not found.
func TestQueueRunNowFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	pgtest.Retrying(t, st, "orders")
	if out := d.ok(t, "queue", "run-now", "orders", "--dry-run"); !strings.Contains(out, "1 message of queue orders waiting to retry would be made visible now") ||
		!strings.Contains(out, "next: pgbus queue run-now orders") || !strings.Contains(out, "note: no worker process has served queue orders") ||
		!strings.Contains(out, "next: pgbus work --queue orders") {
		t.Fatalf("run-now --dry-run:\n%s", out)
	}
	var res struct {
		Visible int64 `json:"visible"`
		DryRun  bool  `json:"dry_run"`
	}
	if err := json.Unmarshal([]byte(d.ok(t, "queue", "run-now", "orders", "--json")), &res); err != nil || res.Visible != 1 || res.DryRun {
		t.Fatalf("run-now --json = %+v, %v; want 1 made visible", res, err)
	}
	var waiting int
	d.query(t, `SELECT count(*) FROM pgmq.q_orders WHERE vt <= now()`, &waiting)
	if waiting != 1 {
		t.Fatalf("%d messages visible after run-now, want 1", waiting)
	}
	if r := pgbus(t, d.env, "queue", "run-now", "orders_dlq"); r.code != 2 || !strings.Contains(r.stderr, "dead-letter queue of orders") {
		t.Errorf("run-now of a DLQ: exit %d, %q; want 2, pointing at the queue", r.code, r.stderr)
	}
	if r := pgbus(t, d.env, "queue", "run-now", "nope"); r.code != 3 || !strings.Contains(r.stderr, `queue "nope" does not exist`) {
		t.Errorf("run-now of a missing queue: exit %d, %q; want 3", r.code, r.stderr)
	}
}
