package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestQueueCommands(t *testing.T) {
	t.Parallel()
	d := newDB(t)

	var created ops.QueueCreated
	d.json(t, &created, "queue", "create", "orders", "--max-retries", "8", "--visibility-timeout", "45s",
		"--backoff", "2s", "--backoff-max", "1m", "--jitter", "0.2", "--strategy", "polynomial", "--delete-on-success",
		"--archive-retention", "30d", "--dead-retention", "2160h")
	want := ops.RetrySettings{MaxRetries: 8, VisibilityTimeoutSeconds: 45, BackoffStrategy: "polynomial",
		RetryBackoffSeconds: 2, RetryBackoffMaxSeconds: 60, RetryBackoffJitter: 0.2, OnSuccess: "delete",
		ArchiveRetentionSeconds: 30 * 86400, DeadRetentionSeconds: 90 * 86400}
	if created.Queue != "orders" || created.DLQ != "orders_dlq" || !created.Created || !created.Changed || created.Priorities != 0 || !sameSettings(created.Settings, want) {
		t.Fatalf("queue create: %+v", created)
	}
	var again ops.QueueCreated
	d.json(t, &again, "queue", "create", "orders")
	if again.Created || again.Changed || !sameSettings(again.Settings, want) {
		t.Fatalf("second create changed something: %+v", again)
	}
	if len(again.Kept) != 9 || again.Kept[0] != "max_retries 8, default 5" {
		t.Fatalf("second create without settings: kept %q; want the 9 settings set before, max_retries first", again.Kept)
	}
	out := d.ok(t, "queue", "create", "orders", "--max-retries", "3")
	if !strings.Contains(out, "settings updated") || !strings.Contains(out, "max_retries 3") {
		t.Fatalf("update: %q", out)
	}
	// The polynomial strategy does not use the backoff: its waits are
	// said as they are, not as the backoff's range.
	if !strings.Contains(out, "polynomial backoff (attempt⁴ + 2s, up to 1m0s)") || strings.Contains(out, "2s..") {
		t.Fatalf("update of a polynomial queue says its waits as %q", out)
	}
	// max_retries counts runs, not retries after the first: the column
	// says so, and the backoff has its own.
	if cells := queuesRow(t, d.ok(t, "queues", "orders"), "orders"); cells["MAX RUNS"] != "3" || cells["BACKOFF"] != "poly 3s..1m0s" {
		t.Fatalf("queues: the MAX RUNS and BACKOFF of a polynomial queue: %q", cells)
	}
	if !strings.Contains(out, "kept as set before (give them to change them): visibility_timeout 45s, default 30s;") || strings.Contains(out, "max_retries 8") {
		t.Fatalf("update: %q; want the settings it left out named as kept, not the one it gave", out)
	}
	out = d.ok(t, "queue", "create", "emails")
	if !strings.Contains(out, "created queue emails and its dead-letter queue emails_dlq") {
		t.Fatalf("create emails: %q", out)
	}

	// queues: the table, and the JSON of the operation: {"queues": [...]}.
	table := d.ok(t, "queues")
	for _, s := range []string{"QUEUE", "DEPTH", "DLQ", "ARCHIVED", "orders", "emails"} {
		if !strings.Contains(table, s) {
			t.Fatalf("queues table lacks %q:\n%s", s, table)
		}
	}
	var all ops.QueueStatsResult
	d.json(t, &all, "queues")
	if len(all.Queues) != 2 || all.Queues[0].Queue != "emails" || all.Queues[1].Queue != "orders" {
		t.Fatalf("queues --json: %+v", all)
	}
	o := all.Queues[1]
	if o.DLQ != "orders_dlq" || o.Depth != 0 || o.Paused || o.Settings.MaxRetries != 3 || o.Settings.BackoffStrategy != "polynomial" {
		t.Fatalf("orders stats: %+v", o)
	}
	raw := keys(t, d.ok(t, "queues", "orders", "--json"))
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(raw["queues"], &objs); err != nil || len(objs) != 1 || len(raw) != 1 {
		t.Fatalf("queues orders --json: %v (%v)", raw, err)
	}
	for _, k := range []string{"queue", "depth", "visible", "in_flight", "waiting_retry", "scheduled", "dlq", "dlq_depth", "archived", "total_sent", "last_hour", "paused", "settings"} {
		if _, ok := objs[0][k]; !ok {
			t.Errorf("queue stats JSON lacks %q: %s", k, raw["queues"])
		}
	}

	// pause and resume.
	var pr ops.QueuePaused
	d.json(t, &pr, "queue", "pause", "orders")
	if pr.Queue != "orders" || !pr.Paused || !pr.Changed || len(pr.Next) != 1 || !stepIs(pr.Next[0], ops.OpQueueResume) {
		t.Fatalf("pause: %+v", pr)
	}
	if out := d.ok(t, "queue", "pause", "orders"); !strings.Contains(out, "already paused") {
		t.Fatalf("second pause: %q", out)
	}
	if !d.stats(t, "orders").Paused {
		t.Fatal("orders is not paused")
	}
	d.json(t, &pr, "queue", "resume", "orders")
	// No worker serves orders: starting one comes first.
	if pr.Queue != "orders" || pr.Paused || !pr.Changed || len(pr.Next) != 2 || !stepIs(pr.Next[0], ops.OpWork) || !stepIs(pr.Next[1], ops.OpQueueStats) ||
		pr.Workers == nil || pr.Workers.Status != ops.CoverageNever {
		t.Fatalf("resume: %+v", pr)
	}
	if d.stats(t, "orders").Paused {
		t.Fatal("orders is still paused")
	}

	// purge needs --yes.
	for i := range 3 {
		d.ok(t, "send", "orders", fmt.Sprintf(`{"n": %d}`, i))
	}
	before := d.snapshot(t)
	msg := d.fails(t, 2, "queue", "purge", "orders")
	if !strings.Contains(msg, "--yes") || !strings.Contains(msg, "3 live messages") {
		t.Fatalf("purge without --yes: %q", msg)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused purge changed the database:\n%s\n%s", before, after)
	}
	var purged ops.QueuePurged
	d.json(t, &purged, "queue", "purge", "orders", "--yes")
	if purged != (ops.QueuePurged{Queue: "orders", Deleted: 3}) {
		t.Fatalf("purge: %+v", purged)
	}
	if st := d.stats(t, "orders"); st.Depth != 0 {
		t.Fatalf("orders after purge: %+v", st)
	}

	// drop needs --yes, and says what it deletes first, the discarded
	// dead messages a restore would bring back included; dropping a
	// missing queue is not found.
	d.ok(t, "send", "emails", `{"to": "ada@example.com"}`)
	spec := pgtest.DeadSpec{Kind: "send_email", Reason: store.ReasonNonRetryable, Class: "InvalidAddress", Message: "no such mailbox", Payload: `{}`, Attempt: 1}
	dead := pgtest.DeadLetter(t, pgtest.OpenStore(t, d.url), "emails", spec, spec)
	d.ok(t, "dlq", "discard", fmt.Sprint(dead[0]), "--queue", "emails")
	before = d.snapshot(t)
	if msg := d.fails(t, 2, "queue", "drop", "emails"); !strings.Contains(msg, "--yes") || !strings.Contains(msg, "1 live message, 1 dead message in emails_dlq (and 1 discarded from it, which a restore brings back until then)") {
		t.Fatalf("drop without --yes: %q", msg)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused drop changed the database:\n%s\n%s", before, after)
	}
	var dropped ops.QueueDropped
	d.json(t, &dropped, "queue", "drop", "emails", "--yes")
	if dropped != (ops.QueueDropped{Queue: "emails", DLQ: "emails_dlq", Live: 1, Dead: 1, Discarded: 1}) {
		t.Fatalf("drop: %+v", dropped)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.meta WHERE queue_name LIKE 'emails%'`); n != 0 {
		t.Fatalf("%d emails queues left after drop", n)
	}
	d.ok(t, "queue", "create", "scratch")
	if out := d.ok(t, "queue", "drop", "scratch", "--yes"); !strings.Contains(out, "dropped queue scratch and its dead-letter queue scratch_dlq") {
		t.Fatalf("drop: %q", out)
	}
	d.fails(t, 3, "queue", "drop", "emails", "--yes")
	d.fails(t, 3, "queue", "pause", "emails")
	d.fails(t, 3, "queue", "purge", "emails", "--yes")
	if msg := d.fails(t, 3, "queues", "emails"); !strings.Contains(msg, `queue "emails" does not exist`) || !strings.Contains(msg, "see pgbus queues") {
		t.Fatalf("queues of a missing queue: %q", msg)
	}
	// Workers of a queue the file does not declare need it to exist: the
	// error says which command creates it, and nothing is created.
	if msg := d.fails(t, 3, "work", "--queue", "emails", "--handler", "demo", "--until-idle"); !strings.Contains(msg, `queue "emails" does not exist`) ||
		!strings.Contains(msg, "see pgbus queue create emails") {
		t.Fatalf("work on a missing queue: %q", msg)
	}

	// Every write above is in the audit log as the CLI's, named as the
	// operations are; the create that changed nothing and the refused
	// purge and drop are not.
	count := func(tool string) int {
		return d.count(t, `SELECT count(*) FROM pgbus.audit_log WHERE client = 'cli' AND tool = '`+tool+`'`)
	}
	for tool, want := range map[string]int{
		ops.OpQueueCreate: 4, // orders, its update, emails, scratch
		ops.OpQueuePause:  3, // two of orders, one of the missing emails
		ops.OpQueueResume: 1,
		ops.OpQueuePurge:  2, // orders, and the missing emails
		ops.OpQueueDrop:   3, // emails, scratch, and emails again
	} {
		if n := count(tool); n != want {
			t.Errorf("%d %s entries in the audit log, want %d", n, tool, want)
		}
	}
	if n := d.count(t, `SELECT count(*) FROM pgbus.audit_log WHERE is_error AND tool IN ('queue_pause', 'queue_purge', 'queue_drop')`); n != 3 {
		t.Errorf("%d failed queue operations in the audit log, want the 3 on the missing queue", n)
	}
}

func sameSettings(got, want ops.RetrySettings) bool {
	return got.MaxRetries == want.MaxRetries && got.VisibilityTimeoutSeconds == want.VisibilityTimeoutSeconds &&
		got.BackoffStrategy == want.BackoffStrategy && got.RetryBackoffSeconds == want.RetryBackoffSeconds &&
		got.RetryBackoffMaxSeconds == want.RetryBackoffMaxSeconds && got.RetryBackoffJitter == want.RetryBackoffJitter &&
		got.OnSuccess == want.OnSuccess && got.ArchiveRetentionSeconds == want.ArchiveRetentionSeconds && got.DeadRetentionSeconds == want.DeadRetentionSeconds
}

func TestSend(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	dir := t.TempDir()
	file := filepath.Join(dir, "order.json")
	if err := os.WriteFile(file, []byte(`{"order_id": 7, "items": ["a", "b"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	id1 := strings.TrimSpace(d.ok(t, "send", "orders", `{"order_id": 1}`, "--kind", "charge_card"))
	var res ops.Sent
	d.json(t, &res, "send", "orders", "@"+file, "--header", "tenant=acme", "--header", "trace=abc=def")
	if res.Queue != "orders" || res.MsgID <= 0 || fmt.Sprint(res.MsgID) == id1 {
		t.Fatalf("send @file: %+v (first id %s)", res, id1)
	}
	if k := keys(t, d.ok(t, "send", "orders", "--file", file, "--json")); len(k) != 2 || k["queue"] == nil || k["msg_id"] == nil {
		t.Fatalf("send --json keys: %v", k)
	}
	r := pgbusIn(t, d.env, `["from", "stdin"]`, "send", "orders", "-", "--delay", "1h", "--deadline", "2h")
	if r.code != 0 {
		t.Fatalf("send from stdin: %d %s", r.code, r.stderr)
	}
	var first, second ops.Sent
	d.json(t, &first, "send", "orders", `{}`, "--idempotency-key", "order-9")
	d.json(t, &second, "send", "orders", `{"other": true}`, "--idempotency-key", "order-9")
	if first.MsgID != second.MsgID {
		t.Fatalf("same idempotency key gave ids %d and %d", first.MsgID, second.MsgID)
	}
	deadline := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	d.ok(t, "send", "orders", `"plain string"`, "--deadline", deadline.Format(time.RFC3339))

	// What reached the table.
	var kind, tenant, trace string
	d.query(t, `SELECT (SELECT headers->>'pgbus_kind' FROM pgmq.q_orders WHERE msg_id = `+id1+`),
		(SELECT headers->>'tenant' FROM pgmq.q_orders WHERE msg_id = `+fmt.Sprint(res.MsgID)+`),
		(SELECT headers->>'trace' FROM pgmq.q_orders WHERE msg_id = `+fmt.Sprint(res.MsgID)+`)`, &kind, &tenant, &trace)
	if kind != "charge_card" || tenant != "acme" || trace != "abc=def" {
		t.Fatalf("headers: kind %q tenant %q trace %q", kind, tenant, trace)
	}
	var stdinPayload string
	var delayed bool
	d.query(t, `SELECT message::text, vt > now() + interval '50 minutes' FROM pgmq.q_orders WHERE message = '["from", "stdin"]'`, &stdinPayload, &delayed)
	if !delayed {
		t.Fatal("--delay 1h did not delay the message")
	}
	var dl string
	d.query(t, `SELECT headers->>'pgbus_deadline' FROM pgmq.q_orders WHERE message = '"plain string"'`, &dl)
	if got, err := time.Parse(time.RFC3339Nano, dl); err != nil || !got.Equal(deadline) {
		t.Fatalf("deadline header %q, want %s", dl, deadline)
	}
	// The deadline takes an age in days and a date too, as every time does.
	var week ops.Sent
	d.json(t, &week, "send", "orders", `"in a week"`, "--deadline", "7d")
	var days float64
	d.query(t, `SELECT extract(epoch FROM (headers->>'pgbus_deadline')::timestamptz - now()) / 86400 FROM pgmq.q_orders WHERE msg_id = `+fmt.Sprint(week.MsgID), &days)
	if days < 6.9 || days > 7.01 {
		t.Fatalf("--deadline 7d is %.2f days ahead", days)
	}
	if msg := d.fails(t, 2, "send", "orders", "{}", "--deadline", "tomorrow"); !strings.Contains(msg, `--deadline "tomorrow" is not a time: give an RFC 3339 time`) {
		t.Fatalf("--deadline tomorrow: %q", msg)
	}
	if msg := d.fails(t, 2, "send", "orders", "{}", "--deadline", "0s"); !strings.Contains(msg, `--deadline "0s" has passed`) || !strings.Contains(msg, "could never run") {
		t.Fatalf("--deadline 0s: %q; want it refused as a deadline that has passed", msg)
	}
	if n := d.count(t, `SELECT count(*) FROM pgbus.audit_log WHERE client = 'cli' AND tool = 'send'`); n != 8 {
		t.Fatalf("%d send entries in the audit log, want 8", n)
	}
	if n := d.count(t, `SELECT count(*) FROM pgbus.audit_log WHERE arguments::text LIKE '%order_id%'`); n != 0 {
		t.Fatal("the audit log holds payloads; it should hold only their size")
	}
	if msg := d.fails(t, 3, "send", "nosuchqueue", "{}"); !strings.Contains(msg, "see pgbus queue create nosuchqueue") {
		t.Fatalf("send to a missing queue: %q", msg)
	}
	if n := d.count(t, `SELECT count(*) FROM pgbus.audit_log WHERE client = 'cli' AND tool = 'send' AND is_error`); n != 1 {
		t.Fatalf("%d failed send entries in the audit log, want the one to the missing queue", n)
	}
}

// Text a sender put in a message (its kind here) cannot drive the
// terminal that pgbus queue messages prints it on: an escape sequence, a
// carriage return and a C1 control are printed as escapes, while --json
// keeps the kind exactly.
func TestDataCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	const kind = "charge\x1b[2J\x1b]0;owned\a\u009b31m"
	d.ok(t, "send", "orders", `{}`, "--kind", kind)
	out := d.ok(t, "queue", "messages", "orders")
	if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f) }); i >= 0 {
		t.Fatalf("stdout holds the control character %q:\n%q", out[i], out)
	}
	if !strings.Contains(out, `charge\u001b[2J\u001b]0;owned\u0007\u009b31m`) {
		t.Fatalf("the kind is not shown with its controls escaped:\n%s", out)
	}
	// The columns are measured on what is shown: ATTEMPTS starts where
	// its values do.
	lines := strings.Split(out, "\n")
	if col := strings.Index(lines[0], "ATTEMPTS"); col < 0 || len(lines[1]) <= col || lines[1][col] != '0' {
		t.Fatalf("the columns do not line up with the escaped kind:\n%s", out)
	}
	var live ops.LiveMessages
	d.json(t, &live, "queue", "messages", "orders")
	if len(live.Items) != 1 || live.Items[0].Kind != kind {
		t.Fatalf("--json: %+v, want the one message with its kind %q exactly", live.Items, kind)
	}
}

// Every duration flag reads whole days, as the time filters and the
// configuration file do: --delay 2d puts the message two days out.
func TestDurationFlagsTakeDays(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "later")
	id := strings.TrimSpace(d.ok(t, "send", "later", "{}", "--delay", "2d"))
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_later WHERE msg_id = `+id+` AND vt BETWEEN now() + interval '47 hours' AND now() + interval '49 hours'`); n != 1 {
		t.Fatalf("send --delay 2d: message %s is not due in two days", id)
	}
	if msg := d.fails(t, 2, "send", "later", "{}", "--delay", "400d"); !strings.Contains(msg, "too long") {
		t.Fatalf("send --delay 400d: %s; want it refused as too long (at most a year)", msg)
	}
}

// The polynomial strategy has no base backoff, so its backoff max alone
// bounds it: one under the default backoff of 5s was refused for that
// backoff, which the strategy never uses. Switched back to exponential,
// the queue's backoff must fit under its max again.
func TestPolynomialBackoffMaxUnderTheBackoff(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	var created ops.QueueCreated
	d.json(t, &created, "queue", "create", "poly", "--strategy", "polynomial", "--backoff-max", "2s")
	if s := created.Settings; s.BackoffStrategy != "polynomial" || s.RetryBackoffMaxSeconds != 2 {
		t.Fatalf("created %+v; want polynomial with a max of 2s", s)
	}
	msg := d.fails(t, 2, "queue", "create", "poly", "--strategy", "exponential")
	if !strings.Contains(msg, "retry backoff max 2s must be at least the backoff (5s)") {
		t.Fatalf("switch to exponential under the max: %q", msg)
	}
}

// queuesRow is the row of queue in the table of pgbus queues, by column
// name. Columns are apart by two spaces or more, names by one at most.
func queuesRow(t *testing.T, table, queue string) map[string]string {
	t.Helper()
	sep := regexp.MustCompile(`\s{2,}`)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	header := sep.Split(strings.TrimSpace(lines[0]), -1)
	for _, l := range lines[1:] {
		cells := sep.Split(strings.TrimSpace(l), -1)
		if cells[0] != queue {
			continue
		}
		if len(cells) != len(header) {
			t.Fatalf("row of %s has %d cells for %d columns:\n%s", queue, len(cells), len(header), table)
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = cells[i]
		}
		return row
	}
	t.Fatalf("no row of %s:\n%s", queue, table)
	return nil
}
