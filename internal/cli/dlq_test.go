package cli_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/cli"
	"github.com/pgbus/pgbus/store"
)

// deadShop makes queue shop (max_retries 2) with 7 dead messages of three
// causes, by the CLI alone: 3 bad inputs (charge, demo.ValidationError), 2
// handler panics (refund), 2 outages (charge, demo.Unavailable,
// max_retries_exceeded).
func deadShop(t *testing.T, d db) {
	t.Helper()
	d.ok(t, "queue", "create", "shop", "--max-retries", "2", "--backoff", "50ms", "--backoff-max", "100ms")
	for range 3 {
		d.ok(t, "send", "shop", `{"amount_cents": 0}`, "--kind", "charge")
	}
	for range 2 {
		d.ok(t, "send", "shop", `{"simulate": "panic"}`, "--kind", "refund")
	}
	for range 2 {
		d.ok(t, "send", "shop", `{"simulate": "outage", "amount_cents": 100}`, "--kind", "charge")
	}
	d.ok(t, "work", "--queue", "shop", "--handler", "demo", "--until-idle", "--poll-interval", "50ms")
}

func TestDLQCommands(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	deadShop(t, d)

	// summary
	var groups []store.DeadGroup
	d.json(t, &groups, "dlq", "summary")
	if len(groups) != 3 {
		t.Fatalf("summary: %d groups, want 3: %+v", len(groups), groups)
	}
	byClass := map[string]store.DeadGroup{}
	for _, g := range groups {
		if g.DLQ != "shop_dlq" || g.SourceQueue != "shop" || g.FirstDeadAt.IsZero() || g.LastDeadAt.Before(g.FirstDeadAt) ||
			len(g.SampleMsgIDs) != int(g.Count) || len(g.Reasons) != 1 {
			t.Errorf("group %+v", g)
		}
		byClass[g.ErrorClass] = g
	}
	if g := byClass["demo.ValidationError"]; g.Count != 3 || g.Kind != "charge" || g.Reasons[0] != store.ReasonNonRetryable {
		t.Errorf("validation group %+v", g)
	}
	if g := byClass["panic"]; g.Count != 2 || g.Kind != "refund" {
		t.Errorf("panic group %+v", g)
	}
	outage := byClass["demo.Unavailable"]
	if outage.Count != 2 || outage.Kind != "charge" || outage.Reasons[0] != store.ReasonMaxRetriesExceeded {
		t.Errorf("outage group %+v", outage)
	}
	var rawGroups []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(d.ok(t, "dlq", "summary", "--json")), &rawGroups); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dlq", "source_queue", "kind", "error_class", "count", "first_dead_lettered_at", "last_dead_lettered_at", "reasons", "sample_msg_ids"} {
		if _, ok := rawGroups[0][k]; !ok {
			t.Errorf("summary JSON lacks %q", k)
		}
	}
	table := d.ok(t, "dlq", "summary")
	for _, s := range []string{"ERROR CLASS", "demo.ValidationError", "panic", "demo.Unavailable", "7 dead messages in 3 groups", "next: pgbus dlq list"} {
		if !strings.Contains(table, s) {
			t.Errorf("summary table lacks %q:\n%s", s, table)
		}
	}

	// list, its filters and its pages
	var page store.DeadPage
	d.json(t, &page, "dlq", "list")
	if len(page.Items) != 7 || page.NextCursor != "" {
		t.Fatalf("list: %d items, cursor %q", len(page.Items), page.NextCursor)
	}
	for i, it := range page.Items {
		if it.DLQ != "shop_dlq" || it.MsgID <= 0 || it.SourceQueue != "shop" || it.SourceMsgID <= 0 || it.MaxRetries != 2 ||
			it.ErrorClass == "" || it.ErrorMessage == "" || it.PayloadBytes <= 0 || it.Reason == "" || it.Kind == "" {
			t.Errorf("item %+v", it)
		}
		if i > 0 && it.DeadLetteredAt.After(page.Items[i-1].DeadLetteredAt) {
			t.Errorf("list is not newest first at %d", i)
		}
	}
	for filter, want := range map[string]int{
		"--error-class=demo.ValidationError": 3, "--reason=max_retries_exceeded": 2, "--kind=refund": 2,
		"--text=503 service": 2, "--since=1h": 7, "--until=1h": 0, "--queue=shop": 7, "--queue=shop_dlq": 7,
	} {
		d.json(t, &page, "dlq", "list", filter)
		if len(page.Items) != want {
			t.Errorf("list %s: %d items, want %d", filter, len(page.Items), want)
		}
	}
	seen := map[int64]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		args := []string{"dlq", "list", "--limit", "3", "--queue", "shop"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		d.json(t, &page, args...)
		for _, it := range page.Items {
			if seen[it.MsgID] {
				t.Fatalf("id %d on two pages", it.MsgID)
			}
			seen[it.MsgID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			if pages != 2 || len(seen) != 7 {
				t.Fatalf("%d pages, %d ids", pages+1, len(seen))
			}
			break
		}
	}
	if out := d.ok(t, "dlq", "list", "--limit", "3", "--queue", "shop"); !strings.Contains(out, "more: pgbus dlq list --queue shop --limit 3 --cursor ") {
		t.Errorf("list text has no next-page line:\n%s", out)
	}

	// show
	id := outage.SampleMsgIDs[0]
	var m store.DeadMessage
	d.json(t, &m, "dlq", "show", fmt.Sprint(id))
	if m.DLQ != "shop_dlq" || m.MsgID != id || m.Kind != "charge" || m.Block == nil || len(m.History) != 2 {
		t.Fatalf("show: %+v", m)
	}
	if b := m.Block; b.Reason != store.ReasonMaxRetriesExceeded || b.Attempts != 2 || b.MaxRetries != 2 || b.ErrorClass != "demo.Unavailable" ||
		b.SourceQueue != "shop" || b.Version != 1 || b.Source != "worker" {
		t.Errorf("block %+v", *b)
	}
	var payload map[string]any
	if err := json.Unmarshal(m.Payload, &payload); err != nil || payload["simulate"] != "outage" {
		t.Errorf("payload %s (%v)", m.Payload, err)
	}
	if !strings.Contains(string(m.Headers), "pgbus_dead_letter") {
		t.Errorf("headers %s", m.Headers)
	}
	raw := keys(t, d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "shop", "--json", "--no-payload"))
	if string(raw["payload"]) != "null" || raw["dead_letter"] == nil || raw["history"] == nil || raw["headers"] == nil {
		t.Errorf("show --no-payload --json: %v", raw)
	}
	text := d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "shop")
	for _, s := range []string{"dead message", "max_retries_exceeded", "demo.Unavailable", "failures:", "payload:", `"simulate": "outage"`} {
		if !strings.Contains(text, s) {
			t.Errorf("show text lacks %q:\n%s", s, text)
		}
	}
	if text := d.ok(t, "dlq", "show", fmt.Sprint(id), "--no-payload"); strings.Contains(text, `"outage"`) || !strings.Contains(text, "--no-payload") {
		t.Errorf("show --no-payload printed the payload:\n%s", text)
	}
	d.fails(t, 3, "dlq", "show", "99999")
	d.fails(t, 3, "dlq", "show", "99999", "--queue", "shop")
	d.fails(t, 3, "dlq", "show", "1", "--queue", "nosuch")

	// retry one; retrying it again is not found, not a duplicate.
	var rep store.RetryReport
	d.json(t, &rep, "dlq", "retry", fmt.Sprint(id), "--queue", "shop")
	if rep.DryRun || rep.Retried != 1 || rep.Failed != 0 || len(rep.Moved) != 1 {
		t.Fatalf("retry: %+v", rep)
	}
	if mv := rep.Moved[0]; mv.DLQ != "shop_dlq" || mv.DLQMsgID != id || mv.Queue != "shop" || mv.MsgID <= 0 {
		t.Fatalf("moved %+v", mv)
	}
	if n := d.count(t, fmt.Sprintf(`SELECT count(*) FROM pgmq.q_shop WHERE msg_id = %d AND headers->>'pgbus_dlq_retries' = '1' AND NOT headers ? 'pgbus_dead_letter'`, rep.Moved[0].MsgID)); n != 1 {
		t.Fatal("the retried message is not back in shop with pgbus_dlq_retries 1")
	}
	if msg := d.fails(t, 3, "dlq", "retry", fmt.Sprint(id), "--queue", "shop"); !strings.Contains(msg, fmt.Sprint(id)) {
		t.Errorf("second retry: %q", msg)
	}

	// retry-all refuses without --yes, dry-runs, then retries.
	before := d.snapshot(t)
	msg := d.fails(t, 2, "dlq", "retry-all", "--queue", "shop", "--error-class", "demo.Unavailable")
	if !strings.Contains(msg, "refusing to retry 1 dead messages without --yes") {
		t.Errorf("retry-all without --yes: %q", msg)
	}
	d.json(t, &rep, "dlq", "retry-all", "--queue", "shop", "--error-class", "demo.Unavailable", "--dry-run")
	if !rep.DryRun || rep.Retried != 1 || len(rep.Moved) != 1 || rep.Moved[0].MsgID != 0 {
		t.Errorf("dry run: %+v", rep)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused or dry-run retry-all changed the database:\n%s\n%s", before, after)
	}
	out := d.ok(t, "dlq", "retry-all", "--queue", "shop", "--error-class", "demo.Unavailable", "--yes")
	if !strings.Contains(out, "retried 1 dead messages") {
		t.Errorf("retry-all: %q", out)
	}
	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("progress output on a pipe: %q", out)
	}

	// A retry of several ids, one of them gone: the rest move, exit 1.
	val := byClass["demo.ValidationError"].SampleMsgIDs
	r := pgbus(t, d.env, "dlq", "retry", fmt.Sprint(val[0]), "99999", "--queue", "shop")
	if r.code != 1 || !strings.Contains(r.stdout, "retried 1 dead messages; 1 failed") || !strings.Contains(r.stderr, "1 of 2 messages could not be retried") {
		t.Errorf("partial retry: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Workers: the outage is over for retried messages; bad input dies again.
	d.ok(t, "work", "--queue", "shop", "--handler", "demo", "--until-idle", "--poll-interval", "50ms")
	var stats []store.QueueStats
	d.json(t, &stats, "queues", "shop")
	if stats[0].Depth != 0 || stats[0].DLQDepth != 5 || stats[0].Archived != 2 {
		t.Fatalf("after retries and work: %+v", stats[0])
	}
	d.json(t, &groups, "dlq", "summary", "--queue", "shop")
	for _, g := range groups {
		if g.ErrorClass == "demo.Unavailable" {
			t.Fatalf("outage messages still dead after retry and work: %+v", g)
		}
	}

	// discard: one id freely, several with --yes, filters with --yes.
	d.json(t, &page, "dlq", "list", "--error-class", "demo.ValidationError")
	if len(page.Items) != 3 {
		t.Fatalf("%d validation errors", len(page.Items))
	}
	var disc cli.DiscardResult
	d.json(t, &disc, "dlq", "discard", fmt.Sprint(page.Items[0].MsgID), "--queue", "shop")
	if disc.Discarded != 1 {
		t.Fatalf("discard one: %+v", disc)
	}
	before = d.snapshot(t)
	d.fails(t, 2, "dlq", "discard", fmt.Sprint(page.Items[1].MsgID), fmt.Sprint(page.Items[2].MsgID), "--queue", "shop")
	if msg := d.fails(t, 2, "dlq", "discard", "--queue", "shop", "--reason", "non_retryable_error"); !strings.Contains(msg, "refusing to discard 4 dead messages") {
		t.Errorf("discard by filter without --yes: %q", msg)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused discards changed the database:\n%s\n%s", before, after)
	}
	d.json(t, &disc, "dlq", "discard", "--queue", "shop", "--reason", "non_retryable_error", "--yes")
	if disc.Discarded != 4 {
		t.Fatalf("discard by filter: %+v", disc)
	}
	d.fails(t, 3, "dlq", "discard", fmt.Sprint(page.Items[0].MsgID), "--queue", "shop")
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_shop_dlq`); n != 0 {
		t.Fatalf("%d messages left in shop_dlq", n)
	}

	// purge deletes the discarded ones for good, only with --yes.
	before = d.snapshot(t)
	d.fails(t, 2, "dlq", "purge", "--queue", "shop")
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused purge changed the database")
	}
	var purged cli.PurgeResult
	d.json(t, &purged, "dlq", "purge", "--queue", "shop", "--yes")
	if purged.Purged != 5 {
		t.Fatalf("purge: %+v", purged)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.a_shop_dlq`); n != 0 {
		t.Fatalf("%d archived dead messages left", n)
	}

	// audit: every write above, by the CLI.
	var audit store.AuditPage
	d.json(t, &audit, "audit", "--limit", "100")
	tools := map[string]int{}
	for _, e := range audit.Items {
		if e.Client != "cli" || e.ID <= 0 || e.At.IsZero() || !json.Valid(e.Arguments) || !json.Valid(e.Result) {
			t.Errorf("audit entry %+v", e)
		}
		tools[e.Tool]++
	}
	for _, tool := range []string{"dlq retry", "dlq retry-all", "dlq discard", "dlq purge", "send", "queue create"} {
		if tools[tool] == 0 {
			t.Errorf("no %q entry in the audit log: %v", tool, tools)
		}
	}
	if tools["dlq retry-all"] != 1 {
		t.Errorf("retry-all recorded %d times; the refused and dry runs must not be", tools["dlq retry-all"])
	}
	d.json(t, &audit, "audit", "--tool", "dlq discard", "--client", "cli")
	if len(audit.Items) != 3 || !slices.ContainsFunc(audit.Items, func(e store.AuditEntry) bool { return e.IsError }) {
		t.Errorf("dlq discard entries: %+v", audit.Items)
	}
	auditKeys := keys(t, d.ok(t, "audit", "--limit", "1", "--json"))
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(auditKeys["items"], &items); err != nil || len(items) != 1 || auditKeys["next_cursor"] == nil {
		t.Fatalf("audit page JSON: %v (%v)", auditKeys, err)
	}
	for _, k := range []string{"id", "at", "client", "tool", "arguments", "result", "is_error"} {
		if _, ok := items[0][k]; !ok {
			t.Errorf("audit entry JSON lacks %q", k)
		}
	}
	if out := d.ok(t, "audit", "--tool", "dlq purge"); !strings.Contains(out, "dlq purge") || !strings.Contains(out, "CLIENT") {
		t.Errorf("audit table:\n%s", out)
	}
}

// On a terminal, bulk operations show a progress bar on stderr; on a pipe
// (every other test) nothing but the result is printed.
func TestProgressOnTerminal(t *testing.T) {
	t.Parallel()
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed; it gives the command a terminal")
	}
	d := newDB(t)
	deadShop(t, d)
	cmd := exec.Command(scriptPath, "-qfec", binary+" dlq retry-all --queue shop --yes", "/dev/null")
	cmd.Env = append(baseEnv(), d.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "retrying") || !strings.Contains(string(out), "retried 7 dead messages") {
		t.Fatalf("no progress bar on a terminal:\n%q", out)
	}
}
