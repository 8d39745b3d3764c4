package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue made after an operator's grants (no default privileges) is
// passed over by the operator's retention, which prunes the queues after
// it and says, as a warning, what to grant; it used to stop every pass at
// the refusal.
func TestRetentionSaysWhatToGrantForAQueueItMayNotPrune(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t) // a database of its own: retention prunes every queue
	owner := pgtest.OpenStore(t, url)
	q, ids := archivedPastRetention(t, owner)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; "+
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role+"; "+
		"GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	if err := owner.CreateQueue(testContext(t), "aaa"); err != nil { // first in name order
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, pgtest.OpenStore(t, roleURL), q, func(cfg *engine.Config) {
		cfg.RetentionInterval = 24 * time.Hour // the pass as it starts
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the old archive row of the queue after aaa pruned", func() bool { return pgtest.Archived(t, owner, q) == 1 })
	pgtest.Eventually(t, 30*time.Second, "the kept queue said", func() bool { return strings.Contains(logs.String(), "retention passed over") })
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.a_aaa TO "+role) ||
		!strings.Contains(out, "queues=\"[aaa aaa_dlq]\"") || strings.Contains(out, "background task failed") {
		t.Fatalf("want a warning naming aaa and its DLQ with the grant on pgmq.a_aaa, no failed task; log:\n%s", out)
	}
	if n := pgtest.Int(t, owner, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1`, ids[1]); n != 1 {
		t.Fatal("retention pruned a recent archive row")
	}
}

// A lock another transaction holds on one queue's archive (as CREATE
// INDEX takes) makes retention pass over that queue, whose archive holds a
// row to prune, saying who holds it, and prune the queues after it; the
// database answers, so it is no outage. The pass used to wait out the
// database call timeout, drop the pool's connections as after a freeze,
// and prune nothing after it.
func TestRetentionPassesOverALockedArchive(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention prunes every queue
	ctx := testContext(t)
	q, _ := archivedPastRetention(t, s)
	if err := s.CreateQueue(ctx, "aaa"); err != nil { // first in name order
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq.a_aaa (msg_id, read_ct, enqueued_at, archived_at, vt, message)
		VALUES (1, 1, now(), now() - interval '400 days', now(), '{}')`); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.a_aaa IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.RetentionInterval = 24 * time.Hour // the pass as it starts
		cfg.DatabaseCallTimeout = 5 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the old archive row of the queue after aaa pruned", func() bool { return pgtest.Archived(t, s, q) == 1 })
	pgtest.Eventually(t, 30*time.Second, "the locked queue said", func() bool { return strings.Contains(logs.String(), "holds locked") })
	out := logs.String()
	if !strings.Contains(out, `queues=[aaa]`) || !strings.Contains(out, "held_by=\"pgmq.a_aaa in ShareLock by pid") ||
		strings.Contains(out, "does not answer") || strings.Contains(out, "no answer within") || strings.Contains(out, "background task failed") {
		t.Fatalf("want aaa said locked with its holder, and no outage; log:\n%s", out)
	}
}

// A pass that deleted anything says so in one line with every count it
// deleted, keys without archived messages, worker rows, breakers and
// counters included; a pass that deleted nothing says nothing.
func TestRetentionLogsWhatItPruned(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention prunes every queue
	ctx := testContext(t)
	q, _ := archivedPastRetention(t, s)
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "old", Hostname: "h", PID: 1, Queues: []string{q}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: "unused", FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, "unused", []store.BreakerUser{{Queue: q}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '8 days' WHERE id = 'old';
		UPDATE pgbus.circuit_breakers SET updated_at = now() - interval '8 days' WHERE name = 'unused';
		UPDATE pgbus.circuit_breaker_users SET seen_at = now() - interval '8 days' WHERE breaker = 'unused';
		INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES (date_trunc('minute', now()) - interval '8 days', 'gone', '', 1);
		INSERT INTO pgbus.idempotency_keys (queue_name, key, msg_id, created_at) VALUES ('gone', 'k', 1, now() - interval '400 days');
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message) VALUES ('gone', 1, 1, 'E', 'old');
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message) VALUES ('`+q+`', 1000000, 1, 'E', 'deleted by another client');
		INSERT INTO pgbus.queue_id_floors (queue_name, last_id) VALUES ('gone_dlq', 0);
		INSERT INTO pgbus.audit_log (at, client, tool) VALUES (now() - interval '100 days', 'cli', 'old')`); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	if err := engine.RunRetention(ctx, c); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	want := `level=INFO msg="pgbus: retention pruned old rows" archived_messages=map[` + q + `:1] idempotency_keys=1 failures_of_dropped_queues=1 failures_of_deleted_messages=1 id_floors=1 ` +
		`audit_entries=1 audit_older_than=2160h0m0s counters=1 counters_older_than=168h0m0s workers=1 breaker_users=1 breakers=1`
	if strings.Count(out, "retention pruned") != 1 || !strings.Contains(out, want) {
		t.Fatalf("the log of a pass that pruned every kind of row:\n%s\nwant one line with\n%s", out, want)
	}
	if err := engine.RunRetention(ctx, c); err != nil {
		t.Fatal(err)
	}
	if again := logs.String(); again != out {
		t.Fatalf("a pass that pruned nothing logged:\n%s", strings.TrimPrefix(again, out))
	}
}

// A retention step that runs past the database call timeout (here the
// counters' prune, waiting for a lock another transaction holds, as a
// delete of a large backlog in one statement ran past it) is told as a
// step too long, not as a database that does not answer, and the pass
// prunes what comes after it: it used to log an outage and skip the rest
// of the pass, every pass.
func TestRetentionStepPastTheCallTimeoutIsNoOutage(t *testing.T) {
	t.Parallel()
	s := pgtest.StuckCountersPrune(t)
	ctx := testContext(t)
	q := pgtest.Name("q")
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.RetentionInterval = 24 * time.Hour // the pass as it starts
		cfg.DatabaseCallTimeout = engine.MinDatabaseCallTimeout
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the old worker row pruned after the counters' step", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.workers WHERE id = 'old'`) == 0
	})
	pgtest.Eventually(t, 30*time.Second, "the step said", func() bool { return strings.Contains(logs.String(), "retention step ran past") })
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "step=counters") ||
		strings.Contains(out, "does not answer") || strings.Contains(out, "background task failed") {
		t.Fatalf("want a warning naming the counters' step, and no outage; log:\n%s", out)
	}
}
