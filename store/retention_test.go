package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestRetentionPrunesOldArchivesInBatches(t *testing.T) {
	s := testStore(t)
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
	rep, err := s.RunRetention(ctx, 100)
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
	s := testStore(t)
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
	rep, err := s.RunRetention(ctx, 100)
	if err != nil || rep.Ran {
		t.Fatalf("retention while another process holds the lock = %+v, %v; want Ran false", rep, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(0x7067627573_726574)); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.RunRetention(ctx, 100); err != nil || !rep.Ran {
		t.Fatalf("retention after release = %+v, %v", rep, err)
	}
}

// A queue dropped while retention runs (listed, then gone before its
// archive is pruned) is skipped: the rest of the pass goes on.
func TestRetentionSkipsAQueueDroppedMeanwhile(t *testing.T) {
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
	rep, err := s.RunRetention(ctx, 100)
	if err != nil || !rep.Ran || rep.ArchivedDeleted[kept] != 1 {
		t.Fatalf("retention = %+v, %v; want the kept queue's old archive pruned, the dropped one skipped", rep, err)
	}
}
