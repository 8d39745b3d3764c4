package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// pgbus queue messages offers pgbus queue run-now while it lists retrying
// messages; run-now makes them visible now, after a --dry-run that only
// counts them, --json as the result is; a DLQ's name is a usage error and
// a queue that does not exist is not found.
func TestQueueRunNowFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	pgtest.Retrying(t, st, "orders")
	if out := d.ok(t, "queue", "messages", "orders"); !strings.Contains(out, "next: pgbus queue run-now orders   # once what failed them is fixed") {
		t.Errorf("queue messages with a retrying message:\n%s\nwant run-now offered", out)
	}
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

// pgbus queue run-now --kind runs only that kind's retrying messages and
// says so; its next step keeps the kind; an empty --kind, or one with a
// byte that is not UTF-8, is a usage error naming the flag, and nothing
// moves.
func TestQueueRunNowOfOneKindFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	for _, kind := range []string{"mail", "sms"} {
		pgtest.RetryingMessage(t, st, "orders", store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": "` + kind + `"}`)})
	}
	for _, bad := range []struct{ kind, want string }{{"", "--kind is empty"}, {"a\xffb", "--kind cannot be used"}} {
		if r := pgbus(t, d.env, "queue", "run-now", "orders", "--kind", bad.kind); r.code != 2 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("run-now --kind %q: exit %d, %q; want 2 saying %q", bad.kind, r.code, r.stderr, bad.want)
		}
	}
	if out := d.ok(t, "queue", "run-now", "orders", "--kind", "mail", "--dry-run"); !strings.Contains(out, "1 message of kind mail of queue orders waiting to retry would be made visible now") ||
		!strings.Contains(out, "next: pgbus queue run-now orders --kind mail") {
		t.Fatalf("run-now --kind mail --dry-run:\n%s", out)
	}
	if out := d.ok(t, "queue", "run-now", "orders", "--kind", "mail"); !strings.Contains(out, "1 message of kind mail of queue orders waiting to retry made visible now") {
		t.Fatalf("run-now --kind mail:\n%s", out)
	}
	var waiting, retrying int
	d.query(t, `SELECT count(*) FILTER (WHERE vt <= now() AND headers->>'pgbus_kind' = 'mail'), count(*) FILTER (WHERE vt > now() AND headers->>'pgbus_kind' = 'sms') FROM pgmq.q_orders`, &waiting, &retrying)
	if waiting != 1 || retrying != 1 {
		t.Fatalf("after run-now --kind mail: %d mail visible, %d sms waiting to retry; want 1 and 1", waiting, retrying)
	}
}

// pgbus queue run-now --in-flight makes visible now the messages a worker
// read and never settled, as after a restore or failover, after a
// --dry-run that counts them and whose next step is the same command
// with --in-flight --yes; the retrying ones keep waiting. Without --yes,
// as other commands that may do harm, it refuses, saying how many it
// would take, with the dry run as its next step, and changes nothing. Its
// help warns that a job still running elsewhere runs twice.
func TestQueueRunNowInFlightFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	pgtest.Retrying(t, st, "orders")
	d.ok(t, "send", "orders", `{"n":1}`)
	// Read by a worker that is gone since, as a restore or failover leaves it.
	pgtest.Exec(t, d.url, `UPDATE pgmq.q_orders SET vt = now() + interval '1 hour', read_ct = 1 WHERE read_ct = 0`)

	if out := d.ok(t, "queue", "run-now", "orders", "--in-flight", "--dry-run"); !strings.Contains(out, "1 message of queue orders in flight would be made visible now") ||
		!strings.Contains(out, "next: pgbus queue run-now orders --in-flight --yes   # ") || !strings.Contains(out, "runs twice") {
		t.Fatalf("run-now --in-flight --dry-run:\n%s", out)
	}
	refused := d.fails(t, 2, "queue", "run-now", "orders", "--in-flight")
	if !strings.Contains(refused, "refusing to make 1 message in flight of queue orders visible without --yes") || !strings.Contains(refused, "pgbus queue run-now orders --dry-run --in-flight") {
		t.Errorf("run-now --in-flight without --yes: %s\nwant a refusal with the count and the dry run", refused)
	}
	var held int
	d.query(t, `SELECT count(*) FROM pgmq.q_orders WHERE vt > now()`, &held)
	if held != 2 {
		t.Fatalf("after run-now --in-flight without --yes: %d messages not visible; want both still waiting", held)
	}
	if out := d.ok(t, "queue", "run-now", "orders", "--in-flight", "--yes"); !strings.Contains(out, "1 message of queue orders in flight made visible now") {
		t.Fatalf("run-now --in-flight:\n%s", out)
	}
	var visible, retrying int
	d.query(t, `SELECT count(*) FILTER (WHERE vt <= now()), count(*) FILTER (WHERE vt > now()) FROM pgmq.q_orders`, &visible, &retrying)
	if visible != 1 || retrying != 1 {
		t.Errorf("after run-now --in-flight: %d visible, %d not; want the one in flight visible, the retrying one waiting", visible, retrying)
	}
	if help := d.ok(t, "queue", "run-now", "--help"); !strings.Contains(help, "--in-flight") || !strings.Contains(help, "runs twice") || !strings.Contains(help, "--yes") {
		t.Errorf("run-now --help:\n%s\nwant --in-flight and its warning", help)
	}
}
