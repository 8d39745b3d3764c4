package cli_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
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

// hasHint reports whether hints hold a step to op.
func hasHint(hints []ops.Hint, op string) bool {
	return slices.ContainsFunc(hints, func(h ops.Hint) bool { return stepIs(h, op) })
}

// stepIs reports whether h, a next step of a command's --json result, is
// the command line of op: steps are the commands to run (op cli,
// args.command), as the MCP tools give a step no tool takes.
func stepIs(h ops.Hint, op string) bool {
	c, name := stepCommand(h), vocab.CommandName(op)
	return h.Op == "cli" && (c == name || strings.HasPrefix(c, name+" ") || op == ops.OpDLQRetry && strings.HasPrefix(c, "pgbus dlq retry-all"))
}

// stepCommand is the command line of h, a next step of a --json result.
func stepCommand(h ops.Hint) string {
	c, _ := h.Args["command"].(string)
	return c
}

func TestDLQCommands(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	deadShop(t, d)

	// summary: the result of the operation, as the MCP tool returns it.
	var sum ops.DLQSummary
	d.json(t, &sum, "dlq", "summary")
	groups := sum.Groups
	if len(groups) != 3 || sum.Total != 7 || sum.TotalGroups != 3 || sum.Truncated {
		t.Fatalf("summary: %d groups, total %d of %d groups (truncated %v): %+v", len(groups), sum.Total, sum.TotalGroups, sum.Truncated, groups)
	}
	byClass := map[string]ops.DeadGroup{}
	for i, g := range groups {
		if g.DLQ != "shop_dlq" || g.SourceQueue != "shop" || g.FirstDeadAt.IsZero() || g.LastDeadAt.Before(g.FirstDeadAt) ||
			len(g.SampleMsgIDs) != int(g.Count) || len(g.Reasons) != 1 {
			t.Errorf("group %+v", g)
		}
		if i > 0 && g.Count > groups[i-1].Count {
			t.Errorf("groups are not largest first: %+v", groups)
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
	if len(sum.Next) != 2 || !stepIs(sum.Next[0], ops.OpDLQShow) || !stepIs(sum.Next[1], ops.OpDLQList) ||
		!strings.HasPrefix(stepCommand(sum.Next[0]), fmt.Sprintf("pgbus dlq show %d ", groups[0].SampleMsgIDs[0])) {
		t.Errorf("summary next steps: %+v", sum.Next)
	}
	rawSum := keys(t, d.ok(t, "dlq", "summary", "--json"))
	for _, k := range []string{"groups", "total", "total_groups", "next"} {
		if _, ok := rawSum[k]; !ok {
			t.Errorf("summary JSON lacks %q", k)
		}
	}
	var rawGroups []map[string]json.RawMessage
	if err := json.Unmarshal(rawSum["groups"], &rawGroups); err != nil || len(rawGroups) != 3 {
		t.Fatalf("summary groups JSON: %s (%v)", rawSum["groups"], err)
	}
	for _, k := range []string{"dlq", "source_queue", "kind", "error_class", "error_pattern", "error_message", "count", "first_dead_lettered_at", "last_dead_lettered_at", "reasons", "sample_msg_ids"} {
		if _, ok := rawGroups[0][k]; !ok {
			t.Errorf("summary group JSON lacks %q", k)
		}
	}
	table := d.ok(t, "dlq", "summary")
	for _, s := range []string{"ERROR CLASS", "demo.ValidationError", "panic", "demo.Unavailable", "7 dead messages in 3 groups",
		"MESSAGE", "invalid payload: amount_cents must be positive, got 0",
		fmt.Sprintf("next: pgbus dlq show %d --queue shop_dlq", groups[0].SampleMsgIDs[0]), "next: pgbus dlq list "} {
		if !strings.Contains(table, s) {
			t.Errorf("summary table lacks %q:\n%s", s, table)
		}
	}
	if out := d.ok(t, "dlq", "summary", "--kind", "nothing_of_that_kind"); !strings.Contains(out, "no dead messages") {
		t.Errorf("summary of an empty selection: %q", out)
	}
	d.fails(t, 3, "dlq", "summary", "--queue", "nosuch")

	// list, its filters (one time grammar: RFC 3339, a date, an age) and
	// its pages
	var page ops.DLQList
	d.json(t, &page, "dlq", "list")
	if len(page.Items) != 7 || page.NextCursor != "" || page.Notes == nil {
		t.Fatalf("list: %d items, cursor %q, notes %v", len(page.Items), page.NextCursor, page.Notes)
	}
	for i, it := range page.Items {
		if it.DLQ != "shop_dlq" || it.MsgID <= 0 || it.SourceQueue != "shop" || it.SourceMsgID == nil || *it.SourceMsgID <= 0 || it.MaxRetries == nil || *it.MaxRetries != 2 ||
			it.ErrorClass == "" || it.ErrorMessage == "" || it.PayloadBytes <= 0 || it.Reason == "" || it.Kind == "" {
			t.Errorf("item %+v", it)
		}
		if i > 0 && it.DeadLetteredAt.After(page.Items[i-1].DeadLetteredAt) {
			t.Errorf("list is not newest first at %d", i)
		}
	}
	listKeys := keys(t, d.ok(t, "dlq", "list", "--json"))
	for _, k := range []string{"items", "notes"} {
		if _, ok := listKeys[k]; !ok {
			t.Errorf("list JSON lacks %q: %v", k, listKeys)
		}
	}
	now := time.Now().UTC()
	for filter, want := range map[string]int{
		"--error-class=demo.ValidationError": 3, "--reason=max_retries_exceeded": 2, "--kind=refund": 2,
		"--text=503 service": 2, "--since=1h": 7, "--until=1h": 0, "--queue=shop": 7, "--queue=shop_dlq": 7,
		"--since=7d": 7, "--until=7d": 0, "--since=2000-01-01": 7, "--until=2000-01-01": 0,
		"--since=" + now.Add(-time.Hour).Format(time.RFC3339): 7, "--since=" + now.Add(time.Hour).Format(time.RFC3339): 0,
		"--until=" + now.Add(24*time.Hour).Format(time.DateOnly): 7,
	} {
		d.json(t, &page, "dlq", "list", filter)
		if len(page.Items) != want {
			t.Errorf("list %s: %d items, want %d", filter, len(page.Items), want)
		}
	}
	seen := map[int64]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		args := []string{"dlq", "list", "--limit", "3", "--queue", "shop", "--since", "1h"}
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

	// show: the block apart from the headers, the history, the payload.
	id := outage.SampleMsgIDs[0]
	var m ops.DeadMessage
	d.json(t, &m, "dlq", "show", fmt.Sprint(id))
	if m.DLQ != "shop_dlq" || m.Queue != "shop" || m.MsgID != id || m.Kind != "charge" || m.DeadLetter == nil || len(m.History) != 2 {
		t.Fatalf("show: %+v", m)
	}
	if b := m.DeadLetter; b.Reason != store.ReasonMaxRetriesExceeded || b.Attempts == nil || *b.Attempts != 2 || b.MaxRetries == nil || *b.MaxRetries != 2 || b.ErrorClass != "demo.Unavailable" ||
		b.SourceQueue != "shop" || b.Version == nil || *b.Version != 1 || b.Source != "worker" || !strings.Contains(b.ErrorMessage, "503") {
		t.Errorf("block %+v", *b)
	}
	for i, f := range m.History {
		// The history moved with the message: it is keyed by its DLQ row.
		if f.Attempt != i+1 || f.ErrorClass != "demo.Unavailable" || f.Queue != m.DLQ || f.MsgID != m.MsgID || f.FailedAt.IsZero() ||
			!strings.Contains(f.ErrorMessage, fmt.Sprintf("attempt %d", i+1)) {
			t.Errorf("history[%d]: %+v", i, f)
		}
	}
	var payload map[string]any
	if err := json.Unmarshal(m.Payload, &payload); err != nil || payload["simulate"] != "outage" || !m.PayloadShown || m.PayloadBytes <= 0 {
		t.Errorf("payload %s shown %v bytes %d (%v)", m.Payload, m.PayloadShown, m.PayloadBytes, err)
	}
	if strings.Contains(string(m.Headers), "pgbus_dead_letter") || !strings.Contains(string(m.Headers), `"pgbus_kind"`) {
		t.Errorf("headers should hold pgbus_kind and not the dead-letter block: %s", m.Headers)
	}
	if len(m.Next) != 2 || !stepIs(m.Next[0], ops.OpDLQRetry) || !stepIs(m.Next[1], ops.OpDLQDiscard) {
		t.Errorf("show next steps: %+v", m.Next)
	}
	raw := keys(t, d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "shop", "--json", "--no-payload"))
	if _, ok := raw["payload"]; ok || string(raw["payload_shown"]) != "false" || raw["dead_letter"] == nil || raw["history"] == nil || raw["headers"] == nil {
		t.Errorf("show --no-payload --json: %v", raw)
	}
	text := d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "shop")
	for _, s := range []string{"dead message", "max_retries_exceeded", "demo.Unavailable", "failures:", "payload:", `"simulate": "outage"`,
		fmt.Sprintf("next: pgbus dlq retry %d --queue shop_dlq", id), fmt.Sprintf("next: pgbus dlq discard %d --queue shop_dlq", id)} {
		if !strings.Contains(text, s) {
			t.Errorf("show text lacks %q:\n%s", s, text)
		}
	}
	if text := d.ok(t, "dlq", "show", fmt.Sprint(id), "--no-payload"); strings.Contains(text, `"outage"`) || !strings.Contains(text, "--no-payload") {
		t.Errorf("show --no-payload printed the payload:\n%s", text)
	}
	d.fails(t, 3, "dlq", "show", "99999")
	if msg := d.fails(t, 3, "dlq", "show", "99999", "--queue", "shop"); !strings.Contains(msg, "99999") || !strings.Contains(msg, "see pgbus dlq list --queue shop") {
		t.Errorf("show of a missing id: %q", msg)
	}
	d.fails(t, 3, "dlq", "show", "1", "--queue", "nosuch")

	// retry one; retrying it again is not found, not a duplicate.
	var rep ops.DLQRetry
	d.json(t, &rep, "dlq", "retry", fmt.Sprint(id), "--queue", "shop")
	if rep.DryRun || rep.Retried != 1 || rep.Failed != 0 || rep.NotFound != 0 || rep.Ambiguous != 0 || len(rep.Moved) != 1 || len(rep.Outcomes) != 1 {
		t.Fatalf("retry: %+v", rep)
	}
	mv := rep.Moved[0]
	if mv.DLQ != "shop_dlq" || mv.DLQMsgID != id || mv.Queue != "shop" || mv.MsgID <= 0 {
		t.Fatalf("moved %+v", mv)
	}
	if o := rep.Outcomes[0]; o.ID != id || o.Outcome != ops.OutcomeRetried || o.DLQ != "shop_dlq" || o.Queue != "shop" || o.NewMsgID != mv.MsgID {
		t.Fatalf("outcome %+v", o)
	}
	if !hasHint(rep.Next, ops.OpQueueMessages) {
		t.Errorf("retry next steps: %+v", rep.Next)
	}
	if n := d.count(t, fmt.Sprintf(`SELECT count(*) FROM pgmq.q_shop WHERE msg_id = %d AND headers->>'pgbus_dlq_retries' = '1' AND NOT headers ? 'pgbus_dead_letter'`, mv.MsgID)); n != 1 {
		t.Fatal("the retried message is not back in shop with pgbus_dlq_retries 1")
	}
	r := pgbus(t, d.env, "dlq", "retry", fmt.Sprint(id), "--queue", "shop")
	if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, fmt.Sprint(id)) {
		t.Errorf("second retry: exit %d, stdout %q, stderr %q; want 3, nothing on stdout and the id on stderr", r.code, r.stdout, r.stderr)
	}

	// retry-all refuses without --yes, dry-runs, then retries.
	before := d.snapshot(t)
	msg := d.fails(t, 2, "dlq", "retry-all", "--queue", "shop", "--error-class", "demo.Unavailable")
	if !strings.Contains(msg, "refusing to retry 1 dead message without --yes; check it with a dry run, then pass --yes: see pgbus dlq retry-all --dry-run --error-class demo.Unavailable --limit 1000 --queue shop") {
		t.Errorf("retry-all without --yes: %q", msg)
	}
	// --json gives the dry run as its next step, as the line names it.
	r = pgbus(t, d.env, "dlq", "retry-all", "--queue", "shop", "--error-class", "demo.Unavailable", "--json")
	if e := decodeErrorJSON(t, r); len(e.Next) != 1 || !strings.Contains(e.Next[0].Command, "pgbus dlq retry-all --dry-run") {
		t.Errorf("retry-all without --yes, --json: next %+v; want the dry run", e.Next)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused retry-all changed the database:\n%s\n%s", before, after)
	}
	audited := d.count(t, `SELECT count(*) FROM pgbus.audit_log`)
	d.json(t, &rep, "dlq", "retry-all", "--queue", "shop", "--error-class", "demo.Unavailable", "--dry-run")
	if !rep.DryRun || rep.Retried != 1 || len(rep.Moved) != 1 || rep.Moved[0].MsgID != 0 || len(rep.Outcomes) != 0 ||
		!hasHint(rep.Next, ops.OpDLQRetry) {
		t.Errorf("dry run: %+v", rep)
	}
	// The dry run moved nothing; the audit log has it (as a dry run, below).
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_shop_dlq`); n != 6 {
		t.Fatalf("dry-run retry-all moved messages: %d left in shop_dlq, want 6", n)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_shop`); n != 1 {
		t.Fatalf("dry-run retry-all sent messages: %d in shop, want the 1 retried", n)
	}
	if n := d.count(t, `SELECT count(*) FROM pgbus.audit_log`); n != audited+1 {
		t.Fatalf("%d audit entries after the dry run, want %d", n, audited+1)
	}
	out := d.ok(t, "dlq", "retry-all", "--queue", "shop", "--error-class", "demo.Unavailable", "--yes")
	if !strings.Contains(out, "retried 1 dead message\n") || !strings.Contains(out, "next: pgbus queue messages shop   #") {
		t.Errorf("retry-all: %q", out)
	}
	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("progress output on a pipe: %q", out)
	}

	// A retry of several ids, one of them missing: the rest move, exit 3,
	// and the audit entry says not everything was done.
	val := byClass["demo.ValidationError"].SampleMsgIDs
	r = pgbus(t, d.env, "dlq", "retry", fmt.Sprint(val[0]), "99999", "--queue", "shop")
	if r.code != 3 || !strings.Contains(r.stdout, "retried 1 dead message\n") ||
		!strings.Contains(r.stderr, "1 of 2 ids could not be retried (not found: 99999)") || !strings.Contains(r.stderr, ": see pgbus dlq list --queue shop") {
		t.Errorf("partial retry: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if n := d.count(t, fmt.Sprintf(`SELECT count(*) FROM pgmq.q_shop_dlq WHERE msg_id = %d`, val[0])); n != 0 {
		t.Errorf("the id found was not retried alongside the missing one")
	}
	last := d.audit(t, "--tool", "dlq_retry", "--limit", "1")
	if len(last) != 1 || !last[0].IsError || last[0].Client != "cli" {
		t.Fatalf("audit entry of the partial retry: %+v", last)
	}
	var recorded ops.DLQRetry
	if err := json.Unmarshal(last[0].Result, &recorded); err != nil || recorded.Retried != 1 || recorded.NotFound != 1 || len(recorded.Outcomes) != 2 ||
		recorded.Outcomes[1].ID != 99999 || recorded.Outcomes[1].Outcome != ops.OutcomeNotFound {
		t.Errorf("audit result of the partial retry: %s (%v)", last[0].Result, err)
	}
	// With --json the result is printed and the exit code is the same.
	r = pgbus(t, d.env, "dlq", "retry", "99998", "--queue", "shop", "--json")
	var missing ops.DLQRetry
	decodeStrict(t, r.stdout, &missing)
	if r.code != 3 || missing.NotFound != 1 || missing.Retried != 0 || len(missing.Outcomes) != 1 || missing.Outcomes[0].Outcome != ops.OutcomeNotFound ||
		!hasHint(missing.Next, ops.OpDLQList) {
		t.Errorf("retry --json of a missing id: exit %d, %+v", r.code, missing)
	}

	// Workers: the outage is over for retried messages; bad input dies again.
	d.ok(t, "work", "--queue", "shop", "--handler", "demo", "--until-idle", "--poll-interval", "50ms")
	if st := d.stats(t, "shop"); st.Depth != 0 || st.DLQDepth != 5 || st.Archived != 2 {
		t.Fatalf("after retries and work: %+v", st)
	}
	d.json(t, &sum, "dlq", "summary", "--queue", "shop")
	for _, g := range sum.Groups {
		if g.ErrorClass == "demo.Unavailable" {
			t.Fatalf("outage messages still dead after retry and work: %+v", g)
		}
	}

	// discard: one id freely, several with --yes, filters with --yes.
	d.json(t, &page, "dlq", "list", "--error-class", "demo.ValidationError")
	if len(page.Items) != 3 {
		t.Fatalf("%d validation errors", len(page.Items))
	}
	var disc ops.DLQDiscard
	d.json(t, &disc, "dlq", "discard", fmt.Sprint(page.Items[0].MsgID), "--queue", "shop")
	if disc.Discarded != 1 || len(disc.Outcomes) != 1 || !reflect.DeepEqual(disc.Outcomes[0], ops.IDOutcome{ID: page.Items[0].MsgID, Outcome: ops.OutcomeDiscarded, DLQ: "shop_dlq"}) {
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
	// --dry-run shows what would go, changes nothing (but the audit log),
	// and names the --expect that discards exactly that.
	dead := `SELECT (SELECT count(*) FROM pgmq.q_shop_dlq) * 1000 + (SELECT count(*) FROM pgmq.a_shop_dlq)`
	deadBefore := d.count(t, dead)
	if out := d.ok(t, "dlq", "discard", "--queue", "shop", "--reason", "non_retryable_error", "--dry-run"); !strings.Contains(out, "would discard 4 dead messages") ||
		!strings.Contains(out, "next: pgbus dlq discard --expect 4-") || !strings.Contains(out, "--yes") {
		t.Errorf("discard --dry-run printed %q", out)
	}
	var dryDisc ops.DLQDiscard
	d.json(t, &dryDisc, "dlq", "discard", "--queue", "shop", "--reason", "non_retryable_error", "--dry-run")
	if !dryDisc.DryRun || dryDisc.Discarded != 4 || len(dryDisc.Moved) != 4 || d.count(t, dead) != deadBefore {
		t.Fatalf("discard --dry-run = %+v, or it moved messages", dryDisc)
	}
	if msg := d.fails(t, 1, "dlq", "discard", "--queue", "shop", "--reason", "non_retryable_error", "--expect", fmt.Sprint(dryDisc.Moved[0].MsgID), "--yes"); !strings.Contains(msg, "changed since they were counted, by the dry run") {
		t.Errorf("discard expecting 1 of the 4: %q", msg)
	}
	if d.count(t, dead) != deadBefore {
		t.Fatal("a refused discard moved messages")
	}
	d.json(t, &disc, "dlq", "discard", "--queue", "shop", "--reason", "non_retryable_error", "--expect", dryDisc.Expect, "--yes")
	if disc.Discarded != 4 || disc.LimitReached || len(disc.Outcomes) != 0 || !reflect.DeepEqual(disc.Moved, dryDisc.Moved) {
		t.Fatalf("discard by filter with the dry run's expect: %+v; want %+v", disc, dryDisc.Moved)
	}
	r = pgbus(t, d.env, "dlq", "discard", fmt.Sprint(page.Items[0].MsgID), "--queue", "shop")
	if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, "it was discarded at ") || !strings.Contains(r.stderr, "by cli (audit entry ") {
		t.Errorf("discard of a discarded id: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_shop_dlq`); n != 0 {
		t.Fatalf("%d messages left in shop_dlq", n)
	}

	// purge deletes the discarded ones for good, only with --yes; an age
	// such as 30d keeps the younger ones.
	// Without it, or with --dry-run, it says how many it would delete.
	before = d.snapshot(t)
	if msg := d.fails(t, 2, "dlq", "purge", "--queue", "shop"); !strings.Contains(msg, "refusing to purge without --yes: it would delete 5 archived dead messages of the DLQ of shop") ||
		!strings.Contains(msg, "check them, then pass --yes: see pgbus dlq discarded --queue shop") {
		t.Fatalf("purge without --yes: %q; want the count and the check", msg)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused purge changed the database")
	}
	// The dry run names the purge that deletes what it counted.
	if out := d.ok(t, "dlq", "purge", "--queue", "shop", "--dry-run"); !strings.HasPrefix(out, "would purge 5 archived dead messages of the DLQ of shop (archived at or before 20") ||
		!strings.Contains(out, "\nnext: pgbus dlq purge --older-than 0s --queue shop --yes   # deletes them for good") {
		t.Fatalf("purge --dry-run:\n%s", out)
	}
	var dryPurge ops.DLQPurge
	d.json(t, &dryPurge, "dlq", "purge", "--queue", "shop", "--older-than", "1h", "--dry-run", "--yes")
	if !dryPurge.DryRun || dryPurge.Purged != 0 || time.Since(dryPurge.DiscardedBefore) < time.Hour || len(dryPurge.Next) != 0 {
		t.Fatalf("purge --older-than 1h --dry-run --json: %+v; want a dry run counting none an hour old, with no purge to take next", dryPurge)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.a_shop_dlq`); n != 5 {
		t.Fatalf("the dry runs left %d archived dead messages, want the 5", n)
	}
	var purged ops.DLQPurge
	d.json(t, &purged, "dlq", "purge", "--queue", "shop", "--older-than", "30d", "--yes")
	if age := time.Since(purged.DiscardedBefore); age < 30*24*time.Hour || age > 30*24*time.Hour+time.Hour {
		t.Fatalf("purge --older-than 30d: discarded_before %s; want 30 days ago", purged.DiscardedBefore)
	}
	purged.DiscardedBefore = time.Time{}
	if !reflect.DeepEqual(purged, ops.DLQPurge{Purged: 0, Queue: "shop", OlderThan: "30d"}) {
		t.Fatalf("purge --older-than 30d: %+v", purged)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.a_shop_dlq`); n != 5 {
		t.Fatalf("purge --older-than 30d deleted young messages: %d archived dead messages left, want 5", n)
	}
	purged = ops.DLQPurge{}
	d.json(t, &purged, "dlq", "purge", "--queue", "shop", "--yes")
	if age := time.Since(purged.DiscardedBefore); age < -time.Hour || age > time.Hour {
		t.Fatalf("purge: discarded_before %s; want now", purged.DiscardedBefore)
	}
	purged.DiscardedBefore = time.Time{}
	if !reflect.DeepEqual(purged, ops.DLQPurge{Purged: 5, Queue: "shop", OlderThan: "0s"}) {
		t.Fatalf("purge: %+v", purged)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.a_shop_dlq`); n != 0 {
		t.Fatalf("%d archived dead messages left", n)
	}

	// audit: every write above, by the CLI, named as the operations are.
	audit := d.audit(t, "--tool", "all") // sends too
	tools := map[string]int{}
	for _, e := range audit {
		if e.Client != "cli" || e.ID <= 0 || e.At.IsZero() || !json.Valid(e.Arguments) || !json.Valid(e.Result) {
			t.Errorf("audit entry %+v", e)
		}
		tools[e.Op]++
	}
	for _, tool := range []string{ops.OpDLQRetry, ops.OpDLQDiscard, ops.OpDLQPurge, ops.OpSend, ops.OpQueueCreate} {
		if tools[tool] == 0 {
			t.Errorf("no %q entry in the audit log: %v", tool, tools)
		}
	}
	// dlq_retry: the retry, the retry of the retried id, the dry run, the
	// retry-all, the partial retry and the --json one; the refused
	// retry-all is not there.
	if tools[ops.OpDLQRetry] != 6 {
		t.Errorf("%d dlq_retry entries, want 6: %v", tools[ops.OpDLQRetry], tools)
	}
	var byFilter, dry int
	for _, e := range audit {
		var args struct {
			Filter ops.DeadFilter `json:"filter"`
			DryRun bool           `json:"dry_run"`
			IDs    []int64        `json:"ids"`
		}
		if e.Op != ops.OpDLQRetry {
			continue
		}
		if err := json.Unmarshal(e.Arguments, &args); err != nil {
			t.Fatalf("dlq_retry arguments %s: %v", e.Arguments, err)
		}
		if args.IDs == nil && args.Filter.ErrorClass == "demo.Unavailable" {
			byFilter++
			if args.DryRun {
				dry++
			}
		}
	}
	if byFilter != 2 || dry != 1 {
		t.Errorf("retry-all recorded %d times (%d dry runs); want the dry run and the real one", byFilter, dry)
	}
	discards := d.audit(t, "--tool", "dlq discard", "--client", "cli")
	if len(discards) != 6 || !slices.ContainsFunc(discards, func(e ops.AuditEntry) bool { return e.IsError }) {
		t.Errorf("dlq discard entries: %+v", discards)
	}
	if other := d.audit(t, "--client", "mcp"); len(other) != 0 {
		t.Errorf("entries of another client: %+v", other)
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
	if out := d.ok(t, "audit", "--tool", "pgbus_dlq_purge"); !strings.Contains(out, "dlq_purge") || !strings.Contains(out, "CLIENT") || strings.Contains(out, "dlq_discard") {
		t.Errorf("audit table:\n%s", out)
	}
}

// On a terminal, bulk operations show a progress bar on stderr; on a pipe
// (every other test) nothing but the result is printed.
func TestProgressOnTerminal(t *testing.T) {
	t.Parallel()
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("this test gives the command a terminal with script(1), which is not on PATH: install util-linux's script (Debian's bsdutils package)")
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

// A bulk retry or discard refused for want of --yes says how many dead
// messages it would touch, those of the groups past the ones a summary
// lists included; and the summary says how many those groups hold, with
// the list of the messages as a next step.
func TestBulkRefusalCountsPastTheListedGroups(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "many")
	groups := store.MaxDeadGroups + 20
	// Five kinds by 104 classes: 520 groups of one.
	if err := pgtest.OpenStore(t, d.url).BulkLoadDead(t.Context(), "many", groups, groups/5); err != nil {
		t.Fatal(err)
	}
	before := d.snapshot(t)
	out := d.ok(t, "dlq", "summary", "--queue", "many")
	if want := fmt.Sprintf("%d dead messages in %d groups (the largest of %d groups: the other 20 hold 20 dead messages)", store.MaxDeadGroups, store.MaxDeadGroups, groups); !strings.Contains(out, want) ||
		!strings.Contains(out, "pgbus dlq list --queue many") {
		t.Errorf("dlq summary of %d groups: want %q and the list of the messages as a next step:\n%s", groups, want, out[max(0, len(out)-1500):])
	}
	// A discard by --queue alone takes --all (TestDiscardOfQueueAloneNeedsAll).
	for verb, selection := range map[string][]string{"retry-all": {"--queue", "many"}, "discard": {"--queue", "many", "--all"}} {
		msg := d.fails(t, 2, append([]string{"dlq", verb}, selection...)...)
		if !strings.Contains(msg, fmt.Sprintf(" %d dead messages without --yes", groups)) || strings.Contains(msg, "at least") {
			t.Errorf("dlq %s without --yes: %q; want %d", verb, msg, groups)
		}
		if msg := d.fails(t, 2, append([]string{"dlq", verb, "--limit", "100"}, selection...)...); !strings.Contains(msg, " 100 dead messages without --yes") || strings.Contains(msg, "at least") {
			t.Errorf("dlq %s --limit 100 without --yes: %q; want 100", verb, msg)
		}
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("a refused bulk operation changed the database:\n%s\n%s", before, after)
	}
}

// A filter flag given an empty value, as a script's unset variable gives
// it, is refused before anything is read or moved: read as no filter it
// would select every dead message. --all is how every one is asked for,
// and the next step a dry run of it names says --all too, and runs.
func TestBlankFilterFlagsSelectNothing(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "blank")
	if err := pgtest.OpenStore(t, d.url).BulkLoadDead(t.Context(), "blank", 4, 2); err != nil {
		t.Fatal(err)
	}
	before := d.snapshot(t)
	for _, args := range [][]string{
		{"dlq", "discard", "--kind", "", "--yes"},
		{"dlq", "discard", "--queue", " ", "--yes"},
		{"dlq", "retry-all", "--error-class", "", "--yes"},
		{"dlq", "retry-all", "--group", "  ", "--dry-run"},
		{"dlq", "list", "--queue", ""},
		{"dlq", "summary", "--text", ""},
	} {
		flag := args[2]
		if msg := d.fails(t, 2, args...); !strings.Contains(msg, flag+" is empty: give a value, or leave the flag out") {
			t.Errorf("pgbus %s: %q; want it to say %s is empty", strings.Join(args, " "), msg, flag)
		}
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("a refused command changed the database:\n%s\n%s", before, after)
	}

	out := d.ok(t, "dlq", "discard", "--all", "--dry-run")
	var next string
	for _, line := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(line, "next: pgbus dlq discard "); ok {
			next, _, _ = strings.Cut(cmd, "   #")
		}
	}
	if !strings.Contains(next, "--all") || !strings.Contains(next, "--expect") {
		t.Fatalf("dlq discard --all --dry-run:\n%s\nwant a next step with --all and --expect", out)
	}
	if got := d.ok(t, append([]string{"dlq", "discard"}, strings.Fields(next)...)...); !strings.Contains(got, "discarded 4 dead messages") {
		t.Fatalf("the next step %q: %s", next, got)
	}
}

// retry-all, like discard, selects nothing without filters: a command line
// that leaves them out (or a script whose variables were all empty) is
// refused before anything is read or moved, and --all is how every dead
// message of every DLQ is asked for. The next step its dry run names
// says --all too, and runs.
func TestRetryAllNeedsFiltersOrAll(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "every")
	if err := pgtest.OpenStore(t, d.url).BulkLoadDead(t.Context(), "every", 3, 1); err != nil {
		t.Fatal(err)
	}
	before := d.snapshot(t)
	for _, args := range [][]string{
		{"dlq", "retry-all", "--yes"},
		{"dlq", "retry-all", "--dry-run"},
		{"dlq", "retry-all"},
	} {
		if msg := d.fails(t, 2, args...); !strings.Contains(msg, "nothing selected: give filters (such as --queue or --error-class), or --all for every dead message") {
			t.Errorf("pgbus %s: %q; want it to ask for filters or --all", strings.Join(args, " "), msg)
		}
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("a refused retry-all changed the database:\n%s\n%s", before, after)
	}

	out := d.ok(t, "dlq", "retry-all", "--all", "--dry-run")
	var next string
	for _, line := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(line, "next: pgbus dlq retry-all "); ok {
			next, _, _ = strings.Cut(cmd, "   #")
		}
	}
	if !strings.Contains(next, "--all") || !strings.Contains(next, "--expect") {
		t.Fatalf("dlq retry-all --all --dry-run:\n%s\nwant a next step with --all and --expect", out)
	}
	if got := d.ok(t, append([]string{"dlq", "retry-all"}, strings.Fields(next)...)...); !strings.Contains(got, "retried 3 dead messages") {
		t.Fatalf("the next step %q: %s", next, got)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_every_dlq`); n != 0 {
		t.Fatalf("%d dead messages left after retry-all --all, want 0", n)
	}
}
