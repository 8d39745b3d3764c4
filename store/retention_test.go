package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

func TestRetentionPrunesOldArchivesInBatches(t *testing.T) {
	t.Parallel()
	// A database of its own: the retention pass of any other package's
	// test would prune this queue's archive, counters and worker row first,
	// or hold the election while this one runs.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	q := newQueue(t, s)
	set := store.DefaultQueueSettings(q)
	set.ArchiveRetention = time.Hour
	set.DeadRetention = 48 * time.Hour
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	ids, err := s.SendBatch(ctx, q, msgs(25))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveMany(ctx, q, ids); err != nil {
		t.Fatal(err)
	}
	// 20 archived two hours ago (past retention), 5 just now.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`" SET archived_at = now() - interval '2 hours' WHERE msg_id <= $1`, ids[19]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetryMany(ctx, q, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message) VALUES ($1, $2, 1, 'E', 'old'), ($1, $3, 1, 'E', 'new')`, q, ids[0], ids[24]); err != nil {
		t.Fatal(err)
	}
	// The DLQ's archive keeps its rows for the longer dead retention.
	dlqIDs, err := s.SendBatch(ctx, q+"_dlq", msgs(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveMany(ctx, q+"_dlq", dlqIDs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`_dlq" SET archived_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneArchived(ctx, q, time.Hour, 7) // 3 batches of 7 rows
	if err != nil || n != 20 {
		t.Fatalf("pruned %d (%v), want 20", n, err)
	}
	if m, _ := s.Metrics(ctx, q); m.Archived != 5 {
		t.Fatalf("archive holds %d, want the 5 recent ones", m.Archived)
	}
	var old, recent int
	_ = s.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE msg_id = $2), count(*) FILTER (WHERE msg_id = $3) FROM pgbus.failures WHERE queue_name = $1`, q, ids[0], ids[24]).Scan(&old, &recent)
	if old != 0 || recent != 1 {
		t.Fatalf("failure rows old=%d recent=%d; history must go with its message and only then", old, recent)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES
		(date_trunc('minute', now()) - interval '8 days', $1, '', 1), (date_trunc('minute', now()), $1, '', 1)`, q); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: q + "-old", Hostname: "h", PID: 1, Queues: []string{q}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '8 days' WHERE id = $1`, q+"-old"); err != nil {
		t.Fatal(err)
	}
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	var stats, workers int
	_ = s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = $1), (SELECT count(*) FROM pgbus.workers WHERE id = $2)`, q, q+"-old").Scan(&stats, &workers)
	if stats != 1 || workers != 0 || rep.StatsDeleted < 1 || rep.WorkersDeleted < 1 {
		t.Fatalf("after retention %d counter rows (want the recent 1) and %d old worker rows (want 0); report %+v", stats, workers, rep)
	}
	if m, _ := s.Metrics(ctx, q+"_dlq"); m.Archived != 3 {
		t.Fatalf("DLQ archive holds %d after retention, want 3 (dead retention is 48h)", m.Archived)
	}
}

// Only one process prunes at a time: while the lock is held elsewhere, a
// pass returns without running.
func TestRetentionIsElected(t *testing.T) {
	t.Parallel()
	// A database of its own (advisory locks are per database): another
	// package's retention pass on a shared one holds the lock now and then.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(0x7067627573_726574)).Scan(&got); err != nil || !got {
		t.Fatalf("take the retention lock: %v %v", got, err)
	}
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || rep.Ran {
		t.Fatalf("retention while another process holds the lock = %+v, %v; want Ran false", rep, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(0x7067627573_726574)); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.RunRetention(ctx, 100, 0); err != nil || !rep.Ran {
		t.Fatalf("retention after release = %+v, %v", rep, err)
	}
}

// A queue dropped while retention runs (listed, then gone before its
// archive is pruned) is skipped: the rest of the pass goes on.
func TestRetentionSkipsAQueueDroppedMeanwhile(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	gone, kept := "dropped_meanwhile", "kept_meanwhile"
	pgtest.CreateQueue(t, s, gone)
	pgtest.CreateQueue(t, s, kept)
	if _, err := s.Send(ctx, kept, store.NewMessage{Payload: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	id := pgtest.Int(t, s, `SELECT max(msg_id) FROM pgmq.q_kept_meanwhile`)
	if _, err := s.Archive(ctx, kept, int64(id)); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `UPDATE pgmq.a_kept_meanwhile SET archived_at = now() - interval '30 days'`)
	// As a drop between the listing and the pruning leaves it: still
	// listed, its archive gone.
	pgtest.Exec(t, url, `DROP TABLE pgmq.a_dropped_meanwhile`)
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran || rep.ArchivedDeleted[kept] != 1 {
		t.Fatalf("retention = %+v, %v; want the kept queue's old archive pruned, the dropped one skipped", rep, err)
	}
}

// Retention forgets an idempotency key only once no send would honour it:
// its message neither live nor archived within the queue's archive
// retention. A key's age says nothing of that: a message sent with a long
// delay stays live past any retention, in a queue with priority levels as
// in one without, and one archived after such a life is kept for the
// retention from then. The keys of a queue that is gone go once old.
func TestRetentionKeepsIdempotencyKeysInForce(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention reads every queue
	ctx := testContext(t)
	q, levels, gone := "keys", "keys_levels", "keys_gone"
	pgtest.CreateQueue(t, s, q)
	pgtest.CreateQueue(t, s, gone)
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	level := store.PriorityQueueName(levels, 1)
	const delay = 60 * 24 * time.Hour
	send := func(queue, key string, delay time.Duration) int64 {
		t.Helper()
		m := keyed(`{}`, key)
		m.Delay = delay
		id, err := s.Send(ctx, queue, m)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	waiting := send(q, "waiting", delay)
	send(level, "waiting-level", delay)
	archivedNow, archivedLong := send(q, "archived-now", 0), send(q, "archived-long-ago", 0)
	deleted := send(q, "deleted", 0)
	send(gone, "gone", 0)
	if _, err := s.ArchiveMany(ctx, q, []int64{archivedNow, archivedLong}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, q, deleted); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq.a_keys SET archived_at = now() - interval '8 days' WHERE msg_id = $1`, archivedLong); err != nil {
		t.Fatal(err)
	}
	pgtest.DropOutside(t, s, gone)
	// 31 days pass for every key and its message: past the archive
	// retention (7 days) and the dead retention (30 days), the longest there
	// is. A key's time is its message's enqueue time.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.idempotency_keys SET created_at = created_at - interval '31 days';
		UPDATE pgmq.q_keys SET enqueued_at = enqueued_at - interval '31 days';
		UPDATE pgmq.a_keys SET enqueued_at = enqueued_at - interval '31 days';
		UPDATE pgmq.q_keys_levels_p1 SET enqueued_at = enqueued_at - interval '31 days'`); err != nil {
		t.Fatal(err)
	}
	rep, err := s.RunRetention(ctx, 1000, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	rows, err := s.Pool().Query(ctx, `SELECT key FROM pgbus.idempotency_keys ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"archived-now", "waiting", "waiting-level"}; !slices.Equal(left, want) || rep.KeysDeleted != 3 {
		t.Fatalf("keys left after retention %v (%d deleted); want %v (3 deleted)", left, rep.KeysDeleted, want)
	}
	if again := send(q, "waiting", delay); again != waiting || pgtest.Live(t, s, q) != 1 {
		t.Fatalf("send with the key of waiting message %d = %d, %d live; want %d, no duplicate", waiting, again, pgtest.Live(t, s, q), waiting)
	}
}

// Migration 0017 indexes the idempotency keys by queue and age, so that
// retention reaches one queue's old keys without reading its younger ones
// or the old keys of every other queue; running it again changes nothing.
func TestMigrationIndexesIdempotencyKeysByQueueAndAge(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: the planner's view of every key
	ctx := testContext(t)
	all, err := schema.All()
	if err != nil || len(all) < 17 || all[16].Version != 17 {
		t.Fatalf("migrations: %d, %v", len(all), err)
	}
	for range 2 {
		if _, err := s.Pool().Exec(ctx, all[16].SQL); err != nil {
			t.Fatalf("migration 17: %v", err)
		}
	}
	// 100 queues of 500 keys each, made over the last 30 days.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.idempotency_keys (queue_name, key, msg_id, created_at)
		SELECT 'q' || (i % 100), 'k' || i, i, now() - (i % 30) * interval '1 day' FROM generate_series(1, 50000) i;
		ANALYZE pgbus.idempotency_keys`); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Pool().Query(ctx, `EXPLAIN SELECT 1 FROM pgbus.idempotency_keys k
		WHERE k.queue_name = 'q7' AND k.created_at < now() - interval '7 days'`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "idempotency_keys_queue_created_idx") {
		t.Fatalf("the search for one queue's old keys is planned as %q; want it to use idempotency_keys_queue_created_idx", plan)
	}
}

// The archive retention of a queue with priority levels, a setting of the
// queue, holds for the archive of each level (each a table of its own,
// with no settings of its own).
func TestRetentionOfPriorityLevels(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention reads every queue
	ctx := testContext(t)
	q := "levels"
	if err := s.CreatePriorityQueue(ctx, q, 2); err != nil {
		t.Fatal(err)
	}
	set := store.DefaultQueueSettings(q)
	set.ArchiveRetention = time.Hour
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	for level := range 2 {
		p := store.PriorityQueueName(q, level)
		ids, err := s.SendBatch(ctx, p, msgs(2))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ArchiveMany(ctx, p, ids); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+p+`" SET archived_at = now() - interval '2 hours' WHERE msg_id = $1`, ids[0]); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	for level := range 2 {
		p := store.PriorityQueueName(q, level)
		if n, left := rep.ArchivedDeleted[p], pgtest.Archived(t, s, p); n != 1 || left != 1 {
			t.Errorf("level %s: retention pruned %d and kept %d of its archive; want the row archived 2 hours ago pruned (retention 1 hour), the recent one kept", p, n, left)
		}
	}
}

// Retention prunes audit entries older than the audit age, oldest first in
// batches (here of 3, over 10 old entries), and keeps the younger ones; an
// age of 0 keeps the log whole.
func TestRetentionPrunesOldAuditEntriesInBatches(t *testing.T) {
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention prunes the whole log
	ctx := testContext(t)
	store.SetAuditPruneBatch(t, 3)
	const age = 90 * 24 * time.Hour
	// 10 entries of 91 to 100 days ago, one of 89 days ago and one now.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.audit_log (at, client, tool)
		SELECT now() - d * interval '1 day', 'cli', 'old' FROM generate_series(91, 100) d
		UNION ALL SELECT now() - interval '89 days', 'cli', 'young'
		UNION ALL SELECT now(), 'cli', 'new'`); err != nil {
		t.Fatal(err)
	}
	left := func() string {
		t.Helper()
		var tools string
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(tool, ' ' ORDER BY at), '') FROM pgbus.audit_log`).Scan(&tools); err != nil {
			t.Fatal(err)
		}
		return tools
	}
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran || rep.AuditDeleted != 0 || strings.Count(left(), "old") != 10 {
		t.Fatalf("retention with audit age 0 = %+v, %v, left %q; want the log kept whole", rep, err, left())
	}
	rep, err = s.RunRetention(ctx, 100, age)
	if err != nil || !rep.Ran || rep.AuditDeleted != 10 {
		t.Fatalf("retention = %+v, %v; want the 10 entries older than 90 days deleted", rep, err)
	}
	if got := left(); got != "young new" {
		t.Fatalf("the audit log after retention holds %q, want the entries of 89 days ago and now", got)
	}
	if n, err := s.PruneAudit(ctx, age); err != nil || n != 0 {
		t.Fatalf("a second prune deleted %d, %v; want nothing", n, err)
	}
	if _, err := s.PruneAudit(ctx, 0); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a prune of age 0: %v; want it refused (it would empty the log)", err)
	}
}

// A queue dropped outside pgbus (PGMQ's drop_queue) leaves its failure
// history behind, with no message to belong to: retention deletes it, in
// batches, and keeps the history of every queue that is still there.
func TestRetentionPrunesTheFailureHistoryOfDroppedQueues(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention reads every queue
	ctx := testContext(t)
	kept, gone := "hist_kept", "hist_gone"
	pgtest.CreateQueue(t, s, kept)
	pgtest.CreateQueue(t, s, gone)
	fail := func(queue string, n int) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
			SELECT $1, g, 1, 'Boom', 'boom' FROM generate_series(1, $2) g`, queue, n); err != nil {
			t.Fatal(err)
		}
	}
	// The history of the queue still there is of messages it holds: live,
	// and in its DLQ's archive.
	sendN(t, s, kept, 3)
	exec(t, s, `INSERT INTO pgmq."a_`+store.DLQName(kept)+`" (msg_id, vt, message) SELECT g, now(), '{}' FROM generate_series(1, 2) g`)
	fail(kept, 3)
	fail(store.DLQName(kept), 2)
	fail(gone, 5)
	fail(store.DLQName(gone), 1)
	pgtest.DropOutside(t, s, gone, store.DLQName(gone))

	rep, err := s.RunRetention(ctx, 2, 0) // batches of 2: the 5 rows of gone take three
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	left := func(queue string) int {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1`, queue)
	}
	if rep.FailuresDeleted != 6 || left(gone) != 0 || left(store.DLQName(gone)) != 0 {
		t.Fatalf("retention deleted %d failures, %d and %d left of the dropped queue and its DLQ; want 6, none left",
			rep.FailuresDeleted, left(gone), left(store.DLQName(gone)))
	}
	if left(kept) != 3 || left(store.DLQName(kept)) != 2 {
		t.Fatalf("failures of the queue still there: %d and %d in its DLQ; want 3 and 2 kept", left(kept), left(store.DLQName(kept)))
	}
	if rep, err = s.RunRetention(ctx, 2, 0); err != nil || rep.FailuresDeleted != 0 {
		t.Fatalf("second retention deleted %d failures (%v); want none", rep.FailuresDeleted, err)
	}
}

// PruneArchived walks the archive in archived_at order from where each
// batch ended: rows of one time split across batches (here 10 of them in
// batches of 3), rows written after younger ones but archived earlier, and
// rows of every age between all go when old enough, with their failure
// history; the recent rows and their history stay.
func TestPruneArchivedTakesEveryOldRowAcrossBatches(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	a := `pgmq."a_` + q + `"`
	exec(t, s, `INSERT INTO `+a+` (msg_id, archived_at, vt, message)
		SELECT g, CASE WHEN g <= 10 THEN now() - interval '3 hours'
		               WHEN g <= 20 THEN now() - interval '2 hours' + g * interval '1 second'
		               WHEN g <= 25 THEN now()
		               ELSE now() - interval '5 hours' END, now(), '{}'
		FROM generate_series(1, 30) g;
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
		SELECT '`+q+`', g, 1, 'E', 'boom' FROM unnest(ARRAY[1, 10, 15, 22, 30]) g`)
	n, err := s.PruneArchived(ctx, q, time.Hour, 3)
	if err != nil || n != 25 {
		t.Fatalf("pruned %d (%v), want the 25 rows older than an hour", n, err)
	}
	var left, history string
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT string_agg(msg_id::text, ' ' ORDER BY msg_id) FROM `+a+`),
		(SELECT string_agg(msg_id::text, ' ' ORDER BY msg_id) FROM pgbus.failures WHERE queue_name = $1)`, q).Scan(&left, &history); err != nil {
		t.Fatal(err)
	}
	if left != "21 22 23 24 25" || history != "22" {
		t.Fatalf("left in the archive %q with failure history of %q; want the recent 21 to 25, and the history of 22 alone", left, history)
	}
	if n, err := s.PruneArchived(ctx, q, time.Hour, 3); err != nil || n != 0 {
		t.Fatalf("a second prune deleted %d, %v; want nothing", n, err)
	}
}

// A partitioned archive (another PGMQ client's) is pruned by age alone: its
// partitions hold rows at the same ctids, and a recent row sharing an old
// row's ctid stays.
func TestPruneArchivedOfAPartitionedArchive(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	pgtest.CreateQueue(t, s, "parts")
	exec(t, s, `DROP TABLE pgmq.a_parts;
		CREATE TABLE pgmq.a_parts (msg_id bigint NOT NULL, read_ct int NOT NULL DEFAULT 0,
			enqueued_at timestamptz NOT NULL DEFAULT now(), archived_at timestamptz NOT NULL DEFAULT now(),
			vt timestamptz NOT NULL, message jsonb, headers jsonb, PRIMARY KEY (msg_id)) PARTITION BY RANGE (msg_id);
		CREATE INDEX ON pgmq.a_parts (archived_at);
		CREATE TABLE pgmq.a_parts_old PARTITION OF pgmq.a_parts FOR VALUES FROM (1) TO (100);
		CREATE TABLE pgmq.a_parts_new PARTITION OF pgmq.a_parts FOR VALUES FROM (100) TO (200);
		UPDATE pgmq.meta SET is_partitioned = true WHERE queue_name = 'parts';
		INSERT INTO pgmq.a_parts (msg_id, archived_at, vt) SELECT g, now() - interval '2 hours', now() FROM generate_series(1, 5) g;
		INSERT INTO pgmq.a_parts (msg_id, archived_at, vt) SELECT g, now(), now() FROM generate_series(100, 104) g`)
	shared := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.a_parts_old o JOIN pgmq.a_parts_new n ON n.ctid = o.ctid`)
	if shared != 5 {
		t.Fatalf("%d rows of the two partitions share a ctid; the test needs all 5", shared)
	}
	n, err := s.PruneArchived(ctx, "parts", time.Hour, 2)
	if err != nil || n != 5 {
		t.Fatalf("pruned %d (%v), want the 5 old rows", n, err)
	}
	if left := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.a_parts_new`); left != 5 {
		t.Fatalf("%d recent rows left, want all 5", left)
	}
}

// The failure history of a dropped queue goes in batches walked in
// (msg_id, attempt) order from where the last one ended: rows of one
// message and attempt split across batches (here four of them in batches
// of 3), rows written out of that order, and negative ids all go, and the
// history of a queue still there, under the same ids, stays.
func TestPruneGoneFailuresTakesEveryRowAcrossBatches(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: the step reads every queue
	ctx := testContext(t)
	kept := newQueue(t, s)
	exec(t, s, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
		SELECT q, m, a, 'E', 'boom' FROM unnest(ARRAY['gone', '`+kept+`']) q,
			unnest(ARRAY[9, 2, 5, 5, 5, 5, 5, 1, -3, 7, 7, 2], ARRAY[1, 1, 1, 1, 1, 1, 2, 3, 1, 2, 1, 2]) AS r(m, a)`)
	n, err := store.PruneGoneFailures(ctx, s, 3)
	if err != nil || n != 12 {
		t.Fatalf("pruned %d (%v), want the 12 rows of the dropped queue", n, err)
	}
	if left := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = 'gone'`); left != 0 {
		t.Fatalf("%d rows of the dropped queue left, want none", left)
	}
	if left := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1`, kept); left != 12 {
		t.Fatalf("%d rows of the queue still there left, want all 12", left)
	}
	if n, err := store.PruneGoneFailures(ctx, s, 3); err != nil || n != 0 {
		t.Fatalf("a second prune deleted %d, %v; want nothing", n, err)
	}
}

// An operator's role whose grants keep the audit log append-only (the
// README's) records entries but may not delete them: its retention pass
// keeps the old entries, says so, and prunes everything else it prunes.
func TestRetentionByAnAppendOnlyRoleKeepsTheAuditLog(t *testing.T) {
	t.Parallel()
	url, owner := newMigratedDatabase(t) // a database of its own: retention prunes the whole log
	ctx := testContext(t)
	role, roleURL := operatorRole(t, url)
	pgtest.Exec(t, url, "REVOKE UPDATE, DELETE ON pgbus.audit_log FROM "+role)
	if _, err := owner.Pool().Exec(ctx, `INSERT INTO pgbus.audit_log (at, client, tool) VALUES (now() - interval '100 days', 'cli', 'old');
		INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES (date_trunc('minute', now()) - interval '8 days', 'q', '', 1)`); err != nil {
		t.Fatal(err)
	}
	op := openStore(t, roleURL)
	if err := op.RecordAudit(ctx, store.AuditEntry{Client: "cli", Tool: "new"}); err != nil {
		t.Fatalf("the append-only role records an entry: %v", err)
	}
	rep, err := op.RunRetention(ctx, 100, 90*24*time.Hour)
	if err != nil || !rep.Ran || !rep.AuditKept || rep.AuditDeleted != 0 || rep.StatsDeleted != 1 {
		t.Fatalf("retention by the append-only role = %+v, %v; want the audit log kept, said so, and the old counter pruned", rep, err)
	}
	var tools string
	if err := owner.Pool().QueryRow(ctx, `SELECT string_agg(tool, ' ' ORDER BY at) FROM pgbus.audit_log`).Scan(&tools); err != nil || tools != "old new" {
		t.Fatalf("the audit log holds %q (%v), want both entries", tools, err)
	}
	if rep, err := owner.RunRetention(ctx, 100, 90*24*time.Hour); err != nil || rep.AuditKept || rep.AuditDeleted != 1 {
		t.Fatalf("retention by the owner = %+v, %v; want the old entry pruned", rep, err)
	}
}

// A retention pass on a pool of one connection runs: its turn holds a
// connection of its own, outside the pool. Held on the pool's only
// connection, it left the pass none, and the pass waited for its context
// to end (a process's database call timeout, taken for an outage).
func TestRetentionOnAPoolOfOne(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	admin := pgtest.OpenStore(t, url)
	ctx, cancel := context.WithTimeout(testContext(t), time.Minute)
	defer cancel()
	if err := admin.CreateQueue(ctx, "pruned"); err != nil {
		t.Fatal(err)
	}
	id, err := admin.Send(ctx, "pruned", store.NewMessage{Payload: json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := admin.Archive(ctx, "pruned", id); err != nil || !ok {
		t.Fatalf("archive: %v, %v", ok, err)
	}
	if _, err := admin.Pool().Exec(ctx, `UPDATE pgmq."a_pruned" SET archived_at = now() - interval '10 years'`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	defer s.Close()
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran || rep.ArchivedDeleted["pruned"] != 1 {
		t.Fatalf("retention on a pool of one: %+v, %v; want it run, the old message pruned", rep, err)
	}
}

// archiveOld sends n messages to queue (made if it is not there) and
// archives them ten years ago: past any retention.
func archiveOld(t *testing.T, s *store.Store, queue string, n int) []int64 {
	t.Helper()
	ctx := testContext(t)
	if err := s.CreateQueue(ctx, queue); err != nil {
		t.Fatal(err)
	}
	ids, err := s.SendBatch(ctx, queue, msgs(n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveMany(ctx, queue, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE `+pgx.Identifier{"pgmq", "a_" + queue}.Sanitize()+` SET archived_at = now() - interval '10 years'`); err != nil {
		t.Fatal(err)
	}
	return ids
}

// A queue made after an operator's grants, without default privileges,
// is one the operator's retention may not prune: the pass passes over it,
// says what to grant, and prunes the queues after it and the rest. It
// used to stop at the refusal, every pass.
func TestRetentionPassesOverAQueueItMayNotPrune(t *testing.T) {
	t.Parallel()
	url, owner := newMigratedDatabase(t) // a database of its own: retention prunes every queue
	ctx := testContext(t)
	archiveOld(t, owner, "zzz", 2)
	role, roleURL := operatorRole(t, url)
	archiveOld(t, owner, "aaa", 2) // after the grants: the operator has no rights on it
	if _, err := owner.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES (date_trunc('minute', now()) - interval '8 days', 'zzz', '', 1)`); err != nil {
		t.Fatal(err)
	}
	rep, err := openStore(t, roleURL).RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran || rep.ArchivedDeleted["zzz"] != 2 || rep.StatsDeleted != 1 {
		t.Fatalf("retention by the operator = %+v, %v; want queue zzz and the old counter pruned past queue aaa", rep, err)
	}
	if len(rep.QueuesKept) != 2 || rep.QueuesKept[0].Queue != "aaa" || rep.QueuesKept[1].Queue != "aaa_dlq" || rep.QueuesKept[0].Why != store.KeptDenied {
		t.Fatalf("queues kept = %+v, want aaa and its DLQ, refused", rep.QueuesKept)
	}
	var tables []string
	for _, g := range rep.QueuesKept[0].Grants {
		if g.Role != role || !slices.Contains(g.Privileges, "DELETE") {
			t.Fatalf("grant %+v: want DELETE for %s", g, role)
		}
		tables = append(tables, g.Table)
	}
	if !slices.Equal(tables, []string{"pgmq.a_aaa", "pgmq.q_aaa"}) {
		t.Fatalf("grants on %v, want the queue's archive and table", tables)
	}
	if n := pgtest.Archived(t, owner, "aaa"); n != 2 {
		t.Fatalf("queue aaa's archive holds %d, want its 2 rows kept", n)
	}
}

// holdLock runs lock in a transaction of another session of s, held until
// the test ends, and returns that session's backend pid.
func holdLock(t *testing.T, s *store.Store, lock string) int {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, lock); err != nil {
		t.Fatal(err)
	}
	return pid
}

// A lock held on one queue's archive, as CREATE INDEX holds one, makes
// the pass pass over that queue, saying who holds it, and prune the
// others: it used to wait out its statement timeout, which the engine
// took for a database that does not answer, and prune nothing after it.
func TestRetentionPassesOverALockedArchive(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention prunes every queue
	ctx := testContext(t)
	archiveOld(t, s, "aaa", 2)
	archiveOld(t, s, "zzz", 2)
	pid := holdLock(t, s, `LOCK TABLE pgmq.a_aaa IN SHARE MODE`)
	// Bounded as the engine bounds a pass, so that a pass that waits for
	// the lock fails rather than waits for ever.
	rep, err := s.RunRetention(store.WithStatementTimeout(ctx, 20*time.Second), 100, 0)
	if err != nil || rep.ArchivedDeleted["zzz"] != 2 || rep.ArchivedDeleted["aaa"] != 0 {
		t.Fatalf("retention with aaa's archive locked = %+v, %v; want zzz pruned, aaa kept", rep, err)
	}
	if len(rep.QueuesKept) != 1 || rep.QueuesKept[0].Queue != "aaa" || rep.QueuesKept[0].Why != store.KeptLocked ||
		!strings.Contains(rep.QueuesKept[0].HeldBy, "pgmq.a_aaa in ShareLock by pid "+strconv.Itoa(pid)) {
		t.Fatalf("queues kept = %+v, want aaa, locked by pid %d", rep.QueuesKept, pid)
	}
	if n := pgtest.Archived(t, s, "aaa"); n != 2 {
		t.Fatalf("aaa's archive holds %d, want its 2 rows kept", n)
	}
}

// A row of an archive another transaction holds locked stays for a later
// pass; the pass prunes the archive's other rows past it rather than wait.
func TestRetentionSkipsLockedArchiveRows(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention prunes every queue
	ctx := testContext(t)
	ids := archiveOld(t, s, "rows", 3)
	holdLock(t, s, `SELECT 1 FROM pgmq.a_rows WHERE msg_id = `+strconv.FormatInt(ids[0], 10)+` FOR UPDATE`)
	rep, err := s.RunRetention(store.WithStatementTimeout(ctx, 20*time.Second), 100, 0)
	if err != nil || rep.ArchivedDeleted["rows"] != 2 || len(rep.QueuesKept) != 0 {
		t.Fatalf("retention with a row locked = %+v, %v; want the 2 other rows pruned, nothing kept", rep, err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.a_rows WHERE msg_id = $1`, ids[0]); n != 1 {
		t.Fatal("the locked row went")
	}
}

// Retention deletes old counters in batches, every one of them whatever
// the batch size (ties of one minute across two batches included), and
// keeps those within StatsRetention.
func TestRetentionPrunesOldCountersInBatches(t *testing.T) {
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention prunes every counter
	ctx := testContext(t)
	store.SetStatsPruneBatch(t, 4)
	// 3 queues' counters of 10 minutes 8 days ago (30 rows, minutes shared
	// by 3 rows each, so that batches of 4 end within a minute), and one
	// counter 6 days ago and one now.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded)
		SELECT date_trunc('minute', now()) - interval '8 days' - m * interval '1 minute', 'q' || q, '', 1
		FROM generate_series(1, 10) m, generate_series(1, 3) q
		UNION ALL SELECT date_trunc('minute', now()) - interval '6 days', 'young', '', 1
		UNION ALL SELECT date_trunc('minute', now()), 'new', '', 1`); err != nil {
		t.Fatal(err)
	}
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran || rep.StatsDeleted != 30 || len(rep.StepsFailed) != 0 {
		t.Fatalf("retention = %+v, %v; want the 30 counters older than 7 days deleted", rep, err)
	}
	var left string
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(queue_name, ' ' ORDER BY minute), '') FROM pgbus.stats_minute`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != "young new" {
		t.Fatalf("counters left after retention: %q; want those of 6 days ago and now", left)
	}
}

// A step of retention that runs past its statement's bound (here the
// counters' prune, waiting for a lock another transaction holds, as a
// delete of millions of rows in one statement ran past it) is listed as
// failed, and the pass goes on with its other steps: worker rows, circuit
// breakers and the DLQ counts' deltas are pruned all the same. It used to
// end the pass, every pass.
func TestRetentionGoesOnPastAStepThatTimesOut(t *testing.T) {
	t.Parallel()
	s := pgtest.StuckCountersPrune(t)
	ctx := testContext(t)
	rep, err := s.RunRetention(store.WithStatementTimeout(ctx, time.Second), 100, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v; want the pass run to its end", rep, err)
	}
	if len(rep.StepsFailed) != 1 || rep.StepsFailed[0].Step != "counters" || !errors.Is(rep.StepsFailed[0].Err, context.DeadlineExceeded) {
		t.Fatalf("steps failed: %+v; want the counters' prune, past its bound", rep.StepsFailed)
	}
	if rep.WorkersDeleted != 1 {
		t.Fatalf("retention = %+v; want the old worker row pruned after the counters' step", rep)
	}
}

// The per-minute counters are kept for the pass's own age when it gives
// one, shorter or longer than StatsRetention, which stays the default.
func TestRetentionKeepsCountersForTheirAge(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention prunes every counter
	ctx := testContext(t)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES
		(date_trunc('minute', now()) - interval '40 days', 'd40', '', 1),
		(date_trunc('minute', now()) - interval '8 days', 'd8', '', 1),
		(date_trunc('minute', now()) - interval '3 days', 'd3', '', 1),
		(date_trunc('minute', now()) - interval '1 day', 'd1', '', 1)`); err != nil {
		t.Fatal(err)
	}
	left := func() string {
		t.Helper()
		var names string
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(queue_name, ' ' ORDER BY minute), '') FROM pgbus.stats_minute`).Scan(&names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	for _, c := range []struct {
		keep time.Duration
		want string
	}{
		{30 * 24 * time.Hour, "d8 d3 d1"},
		{-1, "d8 d3 d1"}, // kept for ever
		{0, "d3 d1"},     // StatsRetention, 7 days
		{48 * time.Hour, "d1"},
	} {
		rep, err := s.RunRetentionAges(ctx, 100, store.RetentionAges{Counters: c.keep})
		if err != nil || !rep.Ran || len(rep.StepsFailed) != 0 {
			t.Fatalf("retention keeping counters %s = %+v, %v", c.keep, rep, err)
		}
		if got := left(); got != c.want {
			t.Fatalf("counters left after a pass keeping them %s: %q, want %q", c.keep, got, c.want)
		}
	}
}
