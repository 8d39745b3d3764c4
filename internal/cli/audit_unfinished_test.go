package cli_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A retry-all killed partway (SIGKILL, as an OOM kill or an eviction ends
// a process) has moved messages already: the audit log says who asked for
// what, and that it did not finish, with its outcome unknown and where to
// see the current state. A retry-all that runs to its end still shows one
// entry, with its outcome, as before.
func TestAuditUnfinishedRetryAllKilled(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "slow")
	pgtest.DeadLetterN(t, s, "slow", 300, pgtest.DeadSpec{Kind: "k", Class: "Down", Message: "down"})
	dlq := "pgmq.q_" + store.DLQName("slow")

	// The newest dead message, which the retry (oldest first) reaches
	// last, is locked: the retry moves the others and waits on it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var locked int64
	if err := tx.QueryRow(ctx, `SELECT msg_id FROM `+dlq+` ORDER BY msg_id DESC LIMIT 1 FOR UPDATE`).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, quickBinary, "dlq", "retry-all", "--queue", "slow", "--yes")
	// Its sessions are told by their name: it moves messages on several.
	cmd.Env = append(baseEnv(), append(d.env, "PGAPPNAME=killed-retry-all")...)
	var out pgtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	pgtest.Eventually(t, time.Minute, "the retry to move messages and wait on the locked one", func() bool {
		return d.count(t, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'killed-retry-all'`) > 0 &&
			d.count(t, `SELECT count(*) FROM pgmq.q_slow`) > 0
	})
	// Still running, in another process: the audit says so.
	if entries := d.audit(t, "--tool", "dlq_retry"); len(entries) != 1 || !entries[0].Unfinished || !entries[0].Running {
		t.Fatalf("audit entries of the retry-all under way: %+v, want one, still running\n%s", entries, out.String())
	}
	if text := d.ok(t, "audit", "--tool", "dlq_retry"); !strings.Contains(text, "note: 1 entry is still running") || strings.Contains(text, "did not finish") {
		t.Errorf("pgbus audit of the retry-all under way does not say it is still running:\n%s", text)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The killed process's sessions would finish the statements they run
	// or wait in (the one waiting, once the lock goes): ended, as the
	// server ends them once it sees their client gone, they move nothing
	// more, and what they moved is counted once they are all gone.
	d.count(t, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'killed-retry-all'`)
	pgtest.Eventually(t, time.Minute, "the killed process's sessions to end", func() bool {
		return d.count(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'killed-retry-all'`) == 0
	})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	moved := d.count(t, `SELECT count(*) FROM pgmq.q_slow`)
	if moved == 0 || moved >= 300 {
		t.Fatalf("%d messages moved before the kill, want some, not all\n%s", moved, out.String())
	}

	entries := d.audit(t, "--tool", "dlq_retry")
	if len(entries) != 1 {
		t.Fatalf("audit entries of the killed retry-all: %+v, want one\n%s", entries, out.String())
	}
	e := entries[0]
	var args struct {
		Filter ops.DeadFilter `json:"filter"`
	}
	var result map[string]string
	if err := json.Unmarshal(e.Arguments, &args); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(e.Result, &result); err != nil {
		t.Fatal(err)
	}
	if !e.Unfinished || e.Running || e.Client != "cli" || e.Transport != "cli" || args.Filter.Queue != "slow" ||
		result["outcome"] != "unknown" || !strings.Contains(result["not_finished"], "counts may be partial") ||
		!strings.Contains(result["not_finished"], "the database session that ran it") {
		t.Fatalf("entry of the killed retry-all: %+v, args %s, result %s", e, e.Arguments, e.Result)
	}
	text := d.ok(t, "audit", "--tool", "dlq_retry")
	for _, want := range []string{"unfinished", "note: 1 entry did not finish, outcome unknown: the database session that ran it ended", "counts may be partial", "next: pgbus dlq summary"} {
		if !strings.Contains(text, want) {
			t.Errorf("pgbus audit does not say %q:\n%s", want, text)
		}
	}

	// The same call run to its end: one entry more, finished, with its
	// outcome, in the shape it always had; the killed one stays
	// unfinished.
	d.ok(t, "dlq", "retry-all", "--queue", "slow", "--yes")
	entries = d.audit(t, "--tool", "dlq_retry")
	if len(entries) != 2 || entries[0].Unfinished || entries[0].IsError || !entries[1].Unfinished || entries[1].ID != e.ID {
		t.Fatalf("audit entries after a retry-all that finished: %+v", entries)
	}
	var res ops.DLQRetry
	if err := json.Unmarshal(entries[0].Result, &res); err != nil || res.Retried != 300-moved {
		t.Fatalf("result of the retry-all that finished: %s (%v), want %d retried", entries[0].Result, err, 300-moved)
	}
	out2 := d.ok(t, "audit", "--tool", "dlq_retry", "--limit", "1", "--json")
	var page struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(out2), &page); err != nil || len(page.Items) != 1 {
		t.Fatalf("audit --json: %s (%v)", out2, err)
	}
	if _, ok := page.Items[0]["unfinished"]; ok {
		t.Errorf("a finished entry carries unfinished: %s", out2)
	}
	if strings.Contains(d.ok(t, "audit", "--tool", "dlq_retry", "--limit", "1"), "did not finish") {
		t.Errorf("a page of finished entries says one did not finish")
	}
}
