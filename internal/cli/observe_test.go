package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A queue with ready messages and no worker is STALLED; once a worker
// has run it dry it is OK, and the worker is listed as stopped; a paused
// queue is DEGRADED. health exits 0 whatever the verdict.
func TestHealthAndWorkers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", `{"simulate": "ok"}`)
	d.ok(t, "send", "orders", `{"simulate": "ok"}`)

	var h ops.Health
	d.json(t, &h, "health")
	if h.Status != ops.HealthStalled || counted(h.Queues) != 1 || counted(h.Backlog) != 2 || counted(h.DeadMessages) != 0 || counted(h.Workers) != 0 || h.CheckedAt.IsZero() {
		t.Fatalf("health with ready messages and no worker: %+v", h)
	}
	if len(h.Reasons) != 1 {
		t.Fatalf("health reasons: %+v", h.Reasons)
	}
	r := h.Reasons[0]
	if r.Status != ops.HealthStalled || r.Code != "no_workers" || r.Workers != ops.CoverageNever || r.Queue != "orders" || !strings.Contains(r.Message, "2 messages ready") ||
		len(r.Next) != 2 || !stepIs(r.Next[0], ops.OpWork) || !strings.Contains(stepCommand(r.Next[0]), "--queue orders") || !stepIs(r.Next[1], ops.OpWorkers) {
		t.Fatalf("stalled reason: %+v", r)
	}
	raw := keys(t, d.ok(t, "health", "--json"))
	for _, k := range []string{"status", "reasons", "queues", "backlog", "dead_messages", "workers_running", "checked_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("health JSON lacks %q", k)
		}
	}
	// --fail-on fails a check at that verdict or worse, after the report.
	for _, c := range []struct {
		level string
		code  int
	}{{"stalled", 1}, {"DEGRADED", 1}} {
		r := pgbus(t, d.env, "health", "--fail-on", c.level)
		if r.code != c.code || !strings.HasPrefix(r.stdout, "STALLED: 1 queue") || !strings.Contains(r.stderr, "health is STALLED, at or past --fail-on "+strings.ToLower(c.level)) {
			t.Fatalf("health --fail-on %s when STALLED: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.level, r.code, c.code, r.stdout, r.stderr)
		}
	}
	if msg := d.fails(t, 2, "health", "--fail-on", "ok"); !strings.Contains(msg, `--fail-on "ok" is no verdict: give degraded or stalled`) {
		t.Fatalf("health --fail-on ok: %q", msg)
	}
	table := d.ok(t, "health")
	for _, s := range []string{
		"STALLED: 1 queue, 2 ready, 0 dead, 0 workers running",
		`STALLED no_workers: queue "orders": 2 messages ready, 0 waiting to retry; no worker process has served queue orders in the last 24 hours`,
		"  next: pgbus work --queue orders", "  next: pgbus workers",
	} {
		if !strings.Contains(table, s) {
			t.Errorf("health table lacks %q:\n%s", s, table)
		}
	}

	// No worker yet.
	var ws ops.Workers
	d.json(t, &ws, "workers")
	if len(ws.Workers) != 0 || ws.Running+ws.Stale+ws.Stopped != 0 {
		t.Fatalf("workers before any ran: %+v", ws)
	}
	if out := d.ok(t, "workers"); !strings.Contains(out, "no worker processes in the last 24 hours") {
		t.Fatalf("workers before any ran: %q", out)
	}

	// A worker runs the queue dry and stops: it is listed, stopped.
	started := time.Now()
	d.ok(t, "work", "--queue", "orders:3", "--handler", "demo", "--until-idle", "--poll-interval", "50ms")
	d.json(t, &ws, "workers")
	if len(ws.Workers) != 1 || ws.Stopped != 1 || ws.Running != 0 || ws.Stale != 0 {
		t.Fatalf("workers after pgbus work --until-idle: %+v", ws)
	}
	w := ws.Workers[0]
	host, _ := os.Hostname()
	if w.Status != ops.WorkerStopped || w.StoppedAt == nil || w.ID == "" || w.PID <= 0 || w.Hostname != host ||
		!reflect.DeepEqual(w.Queues, []string{"orders"}) || w.Concurrency != 3 ||
		w.StartedAt.Before(started.Add(-time.Minute)) || w.HeartbeatAt.Before(w.StartedAt) || w.HeartbeatAgeSeconds < 0 ||
		!strings.HasPrefix(w.Version, "pgbus ") {
		t.Fatalf("worker: %+v", w)
	}
	table = d.ok(t, "workers")
	for _, s := range []string{"STATUS", "HOST", "PID", "stopped", host, fmt.Sprint(w.PID), "orders", "0 running, 0 stale, 1 stopped",
		"VERSION", strings.TrimPrefix(w.Version, "pgbus ")} {
		if !strings.Contains(table, s) {
			t.Errorf("workers table lacks %q:\n%s", s, table)
		}
	}

	// Nothing is ready now: OK.
	d.json(t, &h, "health")
	if h.Status != ops.HealthOK || len(h.Reasons) != 0 || counted(h.Backlog) != 0 || counted(h.Workers) != 0 {
		t.Fatalf("health after the queue drained: %+v", h)
	}
	d.ok(t, "health", "--fail-on", "degraded")
	if out := d.ok(t, "health"); !strings.HasPrefix(out, "OK: 1 queue, 0 ready, 0 dead, 0 workers running\n") {
		t.Fatalf("health table when OK: %q", out)
	}

	// A paused queue with a message waiting needs a look, but is not
	// stalled: nobody is meant to work it.
	d.ok(t, "queue", "pause", "orders")
	d.ok(t, "send", "orders", `{"simulate": "ok"}`)
	d.json(t, &h, "health")
	if h.Status != ops.HealthDegraded || len(h.Reasons) != 1 || h.Reasons[0].Code != "queue_paused" || h.Reasons[0].Queue != "orders" ||
		len(h.Reasons[0].Next) != 1 || !stepIs(h.Reasons[0].Next[0], ops.OpQueueResume) {
		t.Fatalf("health with a paused queue: %+v", h)
	}
	if out := d.ok(t, "health"); !strings.Contains(out, "DEGRADED queue_paused") || !strings.Contains(out, "next: pgbus queue resume orders") {
		t.Fatalf("health table with a paused queue:\n%s", out)
	}
	d.ok(t, "health", "--fail-on", "stalled") // DEGRADED is better than STALLED
	res := pgbus(t, d.env, "health", "--fail-on", "degraded", "--json")
	var failed ops.Health
	if err := json.Unmarshal([]byte(res.stdout), &failed); err != nil || res.code != 1 || failed.Status != ops.HealthDegraded || !strings.Contains(res.stderr, `"kind":"failed"`) {
		t.Fatalf("health --fail-on degraded --json when DEGRADED: exit %d (%v), want 1, the report on stdout and the error as JSON on stderr\nstdout:\n%s\nstderr:\n%s", res.code, err, res.stdout, res.stderr)
	}
}

// circuits lists the breakers with their state, last error redacted;
// circuit reset closes one, is audited, and is not found for a name
// that is not a breaker.
func TestCircuits(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	var none ops.Circuits
	d.json(t, &none, "circuits")
	if len(none.Circuits) != 0 || none.Open != 0 {
		t.Fatalf("circuits on a fresh database: %+v", none)
	}
	if out := d.ok(t, "circuits"); !strings.Contains(out, "no circuit breakers") {
		t.Fatalf("circuits on a fresh database: %q", out)
	}

	// Two breakers as handlers make them: one that two failures opened,
	// one closed.
	ctx := context.Background()
	const api = "http:api.example.com:443"
	for _, c := range []store.BreakerConfig{
		{Name: api, FailureThreshold: 2, CoolOff: time.Hour, MaxCoolOff: 2 * time.Hour},
		{Name: "exec:report", FailureThreshold: 5, CoolOff: time.Second, MaxCoolOff: time.Minute},
	} {
		if err := s.EnsureBreaker(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := s.BreakerFailure(ctx, api, "dial postgres://app:s3cret-pw@db.internal/app: connection refused"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordBreakerUsers(ctx, api, []store.BreakerUser{{Queue: "orders", Kind: "charge"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.BreakerSuccess(ctx, "exec:report"); err != nil {
		t.Fatal(err)
	}
	// A running worker serves orders, whose handler uses the breaker.
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-orders", Hostname: "h", PID: 1, Queues: []string{"orders"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}

	// Health names the open breaker its handler uses, and where to look.
	health := d.ok(t, "health")
	if !strings.Contains(health, "DEGRADED circuit_open: circuit breaker \""+api+"\" is open until") ||
		!strings.Contains(health, "next: pgbus circuits "+api) || strings.Contains(health, "s3cret-pw") {
		t.Fatalf("health with an open breaker:\n%s", health)
	}

	out := d.ok(t, "circuits", "--json")
	if strings.Contains(out, "s3cret-pw") {
		t.Fatalf("circuits --json shows the password in the last error:\n%s", out)
	}
	var cs ops.Circuits
	decodeStrict(t, out, &cs)
	if len(cs.Circuits) != 2 || cs.Open != 1 {
		t.Fatalf("circuits: %+v", cs)
	}
	open, exec := cs.Circuits[0], cs.Circuits[1] // open ones first
	if open.Name != api || open.State != store.BreakerOpen || open.ConsecutiveFailures != 2 || open.FailureThreshold != 2 ||
		open.OpenUntil == nil || open.OpenUntil.Before(time.Now().Add(50*time.Minute)) ||
		!strings.Contains(open.LastError, "connection refused") || !strings.Contains(open.LastError, ops.Redacted) ||
		open.LastFailureAt == nil || open.LastSuccessAt != nil || len(open.Users) != 1 || open.Users[0].Queue != "orders" || open.Users[0].Kind != "charge" {
		t.Fatalf("open breaker: %+v", open)
	}
	if exec.Name != "exec:report" || exec.State != store.BreakerClosed || exec.ConsecutiveFailures != 0 || exec.FailureThreshold != 5 ||
		exec.LastSuccessAt == nil || exec.LastFailureAt != nil || len(exec.Users) != 0 {
		t.Fatalf("closed breaker: %+v", exec)
	}
	table := d.ok(t, "circuits")
	for _, s := range []string{"NAME", "STATE", "FAILURES", "LAST SUCCESS", "LAST FAILURE", "USED BY", api, "open", "2/2", "in ", "orders/charge", "exec:report", "closed", "0/5", ops.Redacted} {
		if !strings.Contains(table, s) {
			t.Errorf("circuits table lacks %q:\n%s", s, table)
		}
	}
	if strings.Contains(table, "s3cret-pw") || strings.Contains(table, "probe due") || open.ProbeDue {
		t.Errorf("circuits table shows the password, or a probe due within the cool-off:\n%s", table)
	}
	// Once the cool-off is over, the next job makes the probe call: the
	// table says so rather than "open" until a moment past.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 minute' WHERE name = $1`, api); err != nil {
		t.Fatal(err)
	}
	if table := d.ok(t, "circuits", api); !strings.Contains(table, "open, probe due") || !strings.Contains(table, "1m ago") {
		t.Errorf("circuits table of a breaker past its cool-off:\n%s", table)
	}
	var one ops.Circuits
	d.json(t, &one, "circuits", "exec:report")
	if len(one.Circuits) != 1 || one.Circuits[0].Name != "exec:report" || one.Open != 0 {
		t.Fatalf("circuits exec:report: %+v; want that breaker alone", one)
	}
	if msg := d.fails(t, 3, "circuits", "http:nosuch:80"); !strings.Contains(msg, `no circuit breaker is named "http:nosuch:80"`) || !strings.Contains(msg, "pgbus circuits") {
		t.Fatalf("circuits of a missing breaker: %q", msg)
	}

	// A job of orders the open breaker snoozed is held by it, which the
	// queue's messages say, offering the reset.
	d.ok(t, "queue", "create", "orders")
	held := pgtest.Held(t, s, "orders", api)
	if out := d.ok(t, "queue", "messages", "orders"); !strings.Contains(out, "scheduled (breaker "+api+")") || !strings.Contains(out, "next: pgbus circuit reset "+api) {
		t.Fatalf("queue messages with a job the breaker holds:\n%s", out)
	}
	d.json(t, &cs, "circuits")
	if cs.Circuits[0].Name != api || cs.Circuits[0].Held != 1 || cs.Circuits[1].Held != 0 {
		t.Fatalf("circuits with a job held: %+v; want %s holding 1", cs.Circuits, api)
	}
	if table := d.ok(t, "circuits", api); !strings.Contains(table, "HELD") || !regexp.MustCompile(`open, probe due +2/2 +1m ago +1 `).MatchString(table) {
		t.Fatalf("circuits table with a job held, HELD 1 wanted:\n%s", table)
	}

	// Reset closes it, clears its failures and runs the job it held.
	var reset ops.CircuitReset
	d.json(t, &reset, "circuit", "reset", api)
	if reset.Name != api || reset.State != store.BreakerClosed || reset.Was != store.BreakerOpen || reset.FailuresBefore == 0 || !reset.Changed ||
		reset.Released != 1 || len(reset.Next) != 2 || !stepIs(reset.Next[0], ops.OpCircuits) || !stepIs(reset.Next[1], ops.OpQueueStats) {
		t.Fatalf("circuit reset: %+v", reset)
	}
	if out := d.ok(t, "queue", "messages", "orders", "--state", "waiting"); !strings.Contains(out, fmt.Sprint(held)) {
		t.Fatalf("the job the breaker held, after the reset:\n%s", out)
	}
	d.json(t, &cs, "circuits")
	if cs.Open != 0 || cs.Circuits[1].State != store.BreakerClosed || cs.Circuits[1].ConsecutiveFailures != 0 || cs.Circuits[1].OpenUntil != nil {
		t.Fatalf("circuits after reset: %+v", cs)
	}
	if out := firstLine(d.ok(t, "circuit", "reset", "exec:report")); out != "circuit breaker exec:report was already closed with no failure counted; nothing changed" {
		t.Fatalf("circuit reset text of a closed breaker: %q", out)
	}
	if _, err := s.BreakerFailure(ctx, "exec:report", "exit 3"); err != nil {
		t.Fatal(err)
	}
	if out := firstLine(d.ok(t, "circuit", "reset", "exec:report")); out != "circuit breaker exec:report was closed with 1 failure in a row; it is closed now" {
		t.Fatalf("circuit reset text of a breaker that counted a failure: %q", out)
	}
	msg := d.fails(t, 3, "circuit", "reset", "http:nosuch:80")
	if !strings.Contains(msg, `circuit breaker "http:nosuch:80" does not exist: a breaker exists once a worker whose handler uses it has started`) || !strings.Contains(msg, "see pgbus circuits") {
		t.Fatalf("reset of a missing breaker: %q", msg)
	}

	// The resets are in the audit log, the failed one as an error; reading
	// the breakers is not.
	entries := d.audit(t)
	if len(entries) != 5 || entries[4].Op != ops.OpQueueCreate {
		t.Fatalf("audit log: %+v", entries)
	}
	for i, e := range entries[:4] {
		if e.Op != ops.OpCircuitReset || e.Client != "cli" || e.IsError != (i == 0) {
			t.Errorf("audit entry %d: %+v", i, e)
		}
	}
	if !strings.Contains(string(entries[3].Arguments), api) {
		t.Errorf("first reset's arguments: %s", entries[3].Arguments)
	}
}

// queue messages lists live messages by state, oldest first, with their
// latest failures and secrets redacted; it pages, and reads leave no
// audit entry.
func TestQueueMessages(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "jobs", "--backoff", "1h", "--backoff-max", "1h", "--jitter", "0")
	d.ok(t, "queue", "create", "quiet")

	// retrying: a message that failed once and waits an hour for its retry.
	retrying := strings.TrimSpace(d.ok(t, "send", "jobs", `{"simulate": "outage", "api_key": "k-live-777"}`, "--kind", "charge"))
	for try := 0; d.count(t, `SELECT count(*) FROM pgbus.failures WHERE queue_name = 'jobs'`) == 0; try++ {
		if try == 10 {
			t.Fatal("the worker did not fail the outage message in 10 runs")
		}
		d.ok(t, "work", "--queue", "jobs", "--handler", "demo", "--for", "2s", "--poll-interval", "50ms")
	}
	// in_flight: a message a consumer has read (as PGMQ's read does: hidden
	// for its visibility timeout, read count up) and not settled.
	inFlight := strings.TrimSpace(d.ok(t, "send", "jobs", `{"n": 1}`))
	if n := d.count(t, `WITH r AS (UPDATE pgmq.q_jobs SET vt = now() + interval '1 hour', read_ct = read_ct + 1 WHERE msg_id = `+inFlight+` RETURNING 1) SELECT count(*) FROM r`); n != 1 {
		t.Fatalf("read %d messages, want 1", n)
	}
	waiting := strings.TrimSpace(d.ok(t, "send", "jobs", `{"n": 2}`))
	scheduled := strings.TrimSpace(d.ok(t, "send", "jobs", `{"n": 3}`, "--delay", "1h"))
	audited := d.count(t, `SELECT count(*) FROM pgbus.audit_log`)

	var page ops.LiveMessages
	d.json(t, &page, "queue", "messages", "jobs")
	var got []string
	for _, m := range page.Items {
		got = append(got, fmt.Sprintf("%d:%s", m.MsgID, m.State))
	}
	want := []string{retrying + ":retrying", inFlight + ":in_flight", waiting + ":waiting", scheduled + ":scheduled"}
	if !reflect.DeepEqual(got, want) || page.NextCursor != "" {
		t.Fatalf("queue messages: %v, want %v (cursor %q)", got, want, page.NextCursor)
	}
	for state, id := range map[string]string{"retrying": retrying, "in_flight": inFlight, "waiting": waiting, "scheduled": scheduled} {
		d.json(t, &page, "queue", "messages", "jobs", "--state", state)
		if len(page.Items) != 1 || fmt.Sprint(page.Items[0].MsgID) != id || page.Items[0].State != state {
			t.Errorf("--state %s: %+v", state, page.Items)
		}
	}

	// The retrying one: its attempt, its failure, its payload redacted.
	out := d.ok(t, "queue", "messages", "jobs", "--state", "retrying", "--json")
	if strings.Contains(out, "k-live-777") {
		t.Fatalf("queue messages shows the api key:\n%s", out)
	}
	decodeStrict(t, out, &page)
	m := page.Items[0]
	var payload map[string]string
	if err := json.Unmarshal(m.Payload, &payload); err != nil {
		t.Fatalf("payload %s: %v", m.Payload, err)
	}
	if m.Queue != "jobs" || m.Kind != "charge" || m.ReadCount != 1 || m.FailureCount != 1 || len(m.History) != 1 ||
		m.History[0].ErrorClass != "demo.Unavailable" || m.History[0].Attempt != 1 || m.VisibleAt.Before(time.Now().Add(50*time.Minute)) ||
		!m.PayloadShown || payload["api_key"] != ops.Redacted || payload["simulate"] != "outage" {
		t.Fatalf("retrying message: %+v (payload %s)", m, m.Payload)
	}
	if !strings.Contains(strings.Join(page.Notes, " "), ops.Redacted) {
		t.Errorf("notes do not say what was redacted: %q", page.Notes)
	}
	table := d.ok(t, "queue", "messages", "jobs", "--state", "retrying")
	for _, s := range []string{"ID", "STATE", "ATTEMPTS", "LAST ERROR", retrying, "retrying", "charge", "demo.Unavailable: demo downstream: 503"} {
		if !strings.Contains(table, s) {
			t.Errorf("queue messages table lacks %q:\n%s", s, table)
		}
	}

	// --no-payload leaves payloads out of the JSON.
	d.json(t, &page, "queue", "messages", "jobs", "--no-payload")
	for _, m := range page.Items {
		if m.PayloadShown || m.Payload != nil || m.PayloadBytes <= 0 {
			t.Errorf("--no-payload: %+v", m)
		}
	}
	if len(page.Notes) == 0 || !strings.Contains(page.Notes[0], "payload hidden") {
		t.Errorf("--no-payload notes: %q", page.Notes)
	}

	// Pages: the text names the command for the next one.
	text := d.ok(t, "queue", "messages", "jobs", "--limit", "2")
	_, cursor, ok := strings.Cut(text, "more: pgbus queue messages jobs --limit 2 --cursor ")
	if !ok {
		t.Fatalf("no next-page line:\n%s", text)
	}
	d.json(t, &page, "queue", "messages", "jobs", "--limit", "2", "--cursor", strings.TrimSpace(cursor))
	if len(page.Items) != 2 || fmt.Sprint(page.Items[0].MsgID) != waiting || fmt.Sprint(page.Items[1].MsgID) != scheduled || page.NextCursor != "" {
		t.Fatalf("second page: %+v", page)
	}

	if out := d.ok(t, "queue", "messages", "quiet"); !strings.Contains(out, "no live messages") {
		t.Errorf("an empty queue: %q", out)
	}
	if out := d.ok(t, "queue", "messages", "quiet", "--state", "retrying"); strings.TrimSpace(out) != "no retrying messages" {
		t.Errorf("an empty queue's retrying messages: %q, want no retrying messages", out)
	}
	d.fails(t, 3, "queue", "messages", "nosuch")
	if n := d.count(t, `SELECT count(*) FROM pgbus.audit_log`); n != audited {
		t.Errorf("listing messages wrote %d audit entries", n-audited)
	}

	// A page of one state names it in the command for the next page, whose
	// cursor another queue or state refuses.
	waiting2 := strings.TrimSpace(d.ok(t, "send", "jobs", `{"n": 4}`))
	text = d.ok(t, "queue", "messages", "jobs", "--state", "waiting", "--limit", "1")
	_, more, ok := strings.Cut(text, "more: pgbus ")
	if !ok || !strings.Contains(more, "--state waiting") {
		t.Fatalf("the next-page line of waiting messages does not name their state:\n%s", text)
	}
	d.json(t, &page, append(strings.Fields(more), "--json")...)
	if len(page.Items) != 1 || fmt.Sprint(page.Items[0].MsgID) != waiting2 || page.Items[0].State != "waiting" {
		t.Fatalf("next page of waiting messages: %+v", page.Items)
	}
	_, cursor, _ = strings.Cut(more, "--cursor ")
	for _, args := range [][]string{{"quiet"}, {"jobs"}, {"jobs", "--state", "retrying"}} {
		args = append([]string{"queue", "messages"}, append(args, "--cursor", strings.TrimSpace(cursor))...)
		if out := d.fails(t, 2, args...); !strings.Contains(out, "start again without --cursor") {
			t.Errorf("pgbus %s: %q; want a refusal of the cursor saying to start again", strings.Join(args, " "), out)
		}
	}
}

// An MCP client that calls itself "cli" is audited as an MCP client, never
// as a person at the command line.
func TestAuditTellsMCPClientsFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	c, _, _ := serveStdioAs(t, "cli", "--database-url", d.url)
	callTool(t, c, "pgbus_queue_pause", map[string]any{"queue": "orders"})
	d.ok(t, "queue", "resume", "orders")
	entries := d.audit(t, "--tool", "queue_pause")
	if len(entries) != 1 || entries[0].Client != "mcp:cli/1" {
		t.Fatalf("the agent's pause is audited as %+v; want client mcp:cli/1", entries)
	}
	if resumed := d.audit(t, "--tool", "queue_resume"); len(resumed) != 1 || resumed[0].Client != "cli" {
		t.Fatalf("the person's resume is audited as %+v; want client cli", resumed)
	}
}

// A message that failed the same way three times shows one folded entry
// by default, and each failure with --full-history.
func TestQueueMessagesFullHistory(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "jobs")
	id := strings.TrimSpace(d.ok(t, "send", "jobs", `{"n": 1}`, "--kind", "charge"))
	st := pgtest.OpenStore(t, d.url)
	ctx := pgtest.Context(t)
	var msgID int64
	fmt.Sscan(id, &msgID)
	for attempt := 1; attempt <= 3; attempt++ {
		item := store.RetryItem{MsgID: msgID, Failure: store.Failure{Attempt: attempt, Kind: "charge", ErrorClass: "net.OpError", ErrorMessage: "connection refused"}}
		if _, err := st.RetryMany(ctx, "jobs", []store.RetryItem{item}); err != nil {
			t.Fatal(err)
		}
	}
	var page ops.LiveMessages
	d.json(t, &page, "queue", "messages", "jobs")
	if len(page.Items) != 1 || len(page.Items[0].History) != 1 || page.Items[0].History[0].Repeated != 3 || page.Items[0].FailureCount != 3 {
		t.Fatalf("folded history: %+v", page.Items)
	}
	d.json(t, &page, "queue", "messages", "jobs", "--full-history")
	if h := page.Items[0].History; len(h) != 3 || h[0].Attempt != 1 || h[2].Attempt != 3 || h[0].Repeated != 0 {
		t.Fatalf("--full-history: %+v", h)
	}
}

// firstLine is out up to its first line break.
func firstLine(out string) string {
	line, _, _ := strings.Cut(out, "\n")
	return line
}

// circuit open holds a breaker open for the time --for gives, says until
// when and how to end it early, and refuses a missing or bad --for and a
// breaker that does not exist, each saying what to do.
func TestCircuitOpen(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	ctx := context.Background()
	const name = "http:api.example.com:443"
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Second, MaxCoolOff: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"circuit", "open", name}, "--for is required"},
		{[]string{"circuit", "open", name, "--for", "0s"}, "--for 0s is too short"},
		{[]string{"circuit", "open", name, "--for", "169h"}, "--for 169h is too long; at most 7d"},
		{[]string{"circuit", "open", name, "--for", "8d"}, "--for 8d is too long; at most 7d"},
		{[]string{"circuit", "open", name, "--for", "-1h"}, "--for"},
		{[]string{"circuit", "open", name, "--for", "soon"}, "--for"},
		{[]string{"circuit", "open", "--for", "1h"}, "arg"},
		{[]string{"circuit", "open", name, "--for", "1h", "--reason"}, "--reason"},
	} {
		if msg := d.fails(t, 2, c.args...); !strings.Contains(msg, c.says) {
			t.Errorf("%v: %q; want it to say %q", c.args, msg, c.says)
		}
	}
	if msg := d.fails(t, 3, "circuit", "open", "http:nosuch:80", "--for", "1h"); !strings.Contains(msg, `circuit breaker "http:nosuch:80" does not exist: a breaker exists once a worker whose handler uses it has started`) || !strings.Contains(msg, "see pgbus circuits") {
		t.Fatalf("open of a missing breaker: %q", msg)
	}
	if msg := d.fails(t, 2, "circuit", "open", name, "--for", "1h", "--reason", strings.Repeat("r", 501)); !strings.Contains(msg, "--reason is 501 bytes long; give at most 500") {
		t.Fatalf("open with a reason too long: %q", msg)
	}
	// In UTC, as every time is shown, whatever the process's time zone.
	r := pgbus(t, append(slices.Clone(d.env), "TZ=Asia/Kathmandu"), "circuit", "open", name, "--for", "30m", "--reason", "bank maintenance,\nOPS-7")
	out := r.stdout
	if r.code != 0 || !regexp.MustCompile(`^circuit breaker `+regexp.QuoteMeta(name)+` was closed; it is open until \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(in (29m|30m)\): its jobs wait`).MatchString(out) ||
		!strings.Contains(out, "next: pgbus circuit reset "+name) || strings.Contains(out, "replaces") {
		t.Fatalf("circuit open:\n%s", out)
	}
	table := d.ok(t, "circuits")
	if !regexp.MustCompile(regexp.QuoteMeta(name)+` +open, by hand +0/2`).MatchString(table) ||
		!strings.Contains(table, "\n"+name+` was opened by hand by cli: "bank maintenance, OPS-7"`) {
		t.Fatalf("circuits after circuit open --reason:\n%s", table)
	}
	var again ops.CircuitOpen
	d.json(t, &again, "circuit", "open", name, "--for", "1d") // days, as every age the CLI takes
	if again.Was != store.BreakerOpen || again.State != store.BreakerOpen || again.OpenUntil.Before(time.Now().Add(23*time.Hour)) ||
		again.Replaced == nil || again.Replaced.Reason != "bank maintenance,\nOPS-7" || again.OpenedByHand.By != "cli" {
		t.Fatalf("circuit open --json of an open breaker: %+v; want it open a day more, the opening it replaced said", again)
	}
	var cs ops.Circuits
	d.json(t, &cs, "circuits", name)
	if len(cs.Circuits) != 1 || cs.Circuits[0].State != store.BreakerOpen || cs.Open != 1 || cs.Circuits[0].OpenedByHand == nil || cs.Circuits[0].OpenedByHand.Reason != "" {
		t.Fatalf("circuits after circuit open: %+v", cs)
	}
	if entries := d.audit(t); len(entries) != 3 || entries[0].Op != ops.OpCircuitOpen || entries[0].IsError || entries[1].IsError || entries[2].Op != ops.OpCircuitOpen || !entries[2].IsError {
		t.Fatalf("audit log: %+v; want the two openings and the refused one", entries)
	}
	// A reset does not end the window unless told to: the refusal says
	// whose it is and offers the reset that ends it.
	if msg := d.fails(t, 2, "circuit", "reset", name); !strings.Contains(msg, `circuit breaker "`+name+`" was opened by hand by cli until `) ||
		!strings.Contains(msg, "pgbus circuit reset "+name+" --end-opening-by-hand") {
		t.Fatalf("circuit reset of a breaker opened by hand, without --end-opening-by-hand: %q", msg)
	}
	if cs := d.ok(t, "circuits", name); !strings.Contains(cs, "open, by hand") {
		t.Fatalf("circuits after the refused reset:\n%s", cs)
	}
	reset := d.ok(t, "circuit", "reset", name, "--end-opening-by-hand")
	if !strings.Contains(reset, "it ends the opening by hand by cli\n") {
		t.Fatalf("circuit reset of a breaker opened by hand:\n%s", reset)
	}
}
