package cli_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A send --ndjson of several transactions killed partway (SIGKILL, as an
// OOM kill or an eviction ends a process) has sent its first batches: its
// stdout holds the ids of each batch as it committed, and the audit log
// shows the send as not finished, with the line to go on from as its next
// step, the same command with --from-line, so that running it again does
// not send the sent lines twice.
func TestSendNDJSONKilledLeavesWhereToGoOn(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	// Two blank lines first: the payloads are lines 3 to 3002, and the
	// first transaction's 1,000 lines 3 to 1002.
	path := writeLines(t, append([]string{"", ""}, ndjsonLines(3000)...))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Every insert into the queue after its first waits for an advisory
	// lock this test holds: the first transaction commits, the second
	// waits until the kill.
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE FUNCTION public.hold_second_batch() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM pgmq.q_orders) THEN
				PERFORM pg_advisory_xact_lock_shared(4242);
			END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER hold_second_batch BEFORE INSERT ON pgmq.q_orders FOR EACH STATEMENT EXECUTE FUNCTION public.hold_second_batch();
		SELECT pg_advisory_lock(4242);`); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, quickBinary, "send", "orders", "--ndjson", path, "--kind", "reimport")
	// Its call timeout outlasts the test: the wait ends with the kill,
	// not with the process giving up.
	cmd.Env = append(baseEnv(), append(d.env, "PGAPPNAME=killed-send", "PGBUS_DATABASE_CALL_TIMEOUT=10m")...)
	var stdout, stderr pgtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	pgtest.Eventually(t, time.Minute, "the first batch to commit and the second to wait", func() bool {
		return d.count(t, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'killed-send'`) > 0 &&
			d.count(t, `SELECT count(*) FROM pgmq.q_orders`) == 1000
	})
	// What the process printed of what committed is there before the
	// kill: read once the batch after it waits.
	pgtest.Eventually(t, time.Minute, "the first batch's ids on stdout", func() bool {
		return strings.Count(stdout.String(), "\n") >= 1000
	})
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	d.count(t, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'killed-send'`)
	pgtest.Eventually(t, time.Minute, "the killed process's sessions to end", func() bool {
		return d.count(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'killed-send'`) == 0
	})
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(4242); DROP TRIGGER hold_second_batch ON pgmq.q_orders`); err != nil {
		t.Fatal(err)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 1000 {
		t.Fatalf("%d messages sent before the kill, want the first batch's 1000", n)
	}

	// Stdout names what was sent: the ids of the batch that committed.
	printed := parseIDs(t, stdout.String())
	var sent []int64
	rows, err := conn.Query(ctx, `SELECT msg_id FROM pgmq.q_orders ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	if sent, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(printed, sent) {
		t.Fatalf("stdout before the kill printed %d ids, want the %d sent\nstderr: %s", len(printed), len(sent), stderr.String())
	}
	if !strings.Contains(stderr.String(), "--from-line 1003") {
		t.Errorf("stderr before the kill does not say to go on from line 1003:\n%s", stderr.String())
	}

	// The audit shows the send unfinished, how far it went, and the
	// command that sends the rest.
	entries := d.audit(t, "--tool", "send")
	if len(entries) != 1 {
		t.Fatalf("audit entries of the killed send: %+v, want one", entries)
	}
	e := entries[0]
	var result map[string]any
	if err := json.Unmarshal(e.Result, &result); err != nil {
		t.Fatal(err)
	}
	if !e.Unfinished || e.Running || result["sent"] != float64(1000) || result["next_line"] != float64(1003) {
		t.Fatalf("entry of the killed send: %+v, result %s; want it unfinished, 1000 sent, next line 1003", e, e.Result)
	}
	want := "pgbus send orders --from-line 1003 --kind reimport --ndjson " + path
	var page ops.AuditPage
	d.json(t, &page, "audit", "--tool", "send")
	if !slices.ContainsFunc(page.Next, func(h ops.Hint) bool { return h.Op == "cli" && h.Args["command"] == want }) {
		t.Fatalf("audit --json of the killed send: next %+v, want %q", page.Next, want)
	}
	text := d.ok(t, "audit", "--tool", "send")
	if !strings.Contains(text, "unfinished") || !strings.Contains(text, "next: "+want) {
		t.Fatalf("pgbus audit does not show the send unfinished with %q:\n%s", want, text)
	}

	// That command sends the rest, and the queue holds each line once.
	d.ok(t, "send", "orders", "--from-line", "1003", "--kind", "reimport", "--ndjson", path)
	if n := d.count(t, `SELECT count(DISTINCT message) FROM pgmq.q_orders`); n != 3000 || d.count(t, `SELECT count(*) FROM pgmq.q_orders`) != 3000 {
		t.Fatalf("%d distinct messages after sending the rest, want each of the 3000 lines once", n)
	}
	entries = d.audit(t, "--tool", "send")
	if len(entries) != 2 || entries[0].Unfinished || entries[0].IsError || !entries[1].Unfinished || entries[1].ID != e.ID {
		t.Fatalf("audit entries after the rest was sent: %+v", entries)
	}
}
