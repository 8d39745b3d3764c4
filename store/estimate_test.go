package store_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue table beyond the exact-count limit is read from the statistics
// system's count of its rows, and says so; what stands behind the
// visibility timeout is still counted exactly, and a queue drained since
// the statistics were taken shows nothing ready.
func TestDepthsOfLargeTablesAreEstimated(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, msgs(30))
	if err != nil {
		t.Fatal(err)
	}
	// Two in flight, one of them failed and waiting to retry; one
	// scheduled; 28 ready; 20 more archived.
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read = %v, %v", got, err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "boom"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	archived, err := s.SendBatch(ctx, q, msgs(20))
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := s.ArchiveMany(ctx, q, archived); err != nil || len(moved) != 20 {
		t.Fatalf("archive = %v, %v", moved, err)
	}
	pgtest.SettleRowStats(t, s, "pgmq.q_"+q, "pgmq.a_"+q)
	stats := func() store.QueueStats {
		t.Helper()
		st, err := s.QueueStats(ctx, q, store.QueueStatsOptions{Archive: true})
		if err != nil || len(st) != 1 {
			t.Fatalf("stats = %+v, %v", st, err)
		}
		return st[0]
	}
	exact := stats()
	if exact.Estimated || exact.ArchivedEstimated || exact.Depth != 31 || exact.Visible != 28 || exact.InFlight != 1 || exact.WaitingRetry != 1 || exact.Scheduled != 1 || exact.Archived != 20 {
		t.Fatalf("stats within the limit = %+v; want exact counts 31 = 28 + 1 + 1 + 1, 20 archived", exact)
	}

	s.SetExactCountLimit(10)
	est := stats()
	if !est.Estimated || !est.ArchivedEstimated || est.Depth != 31 || est.Visible != 28 || est.InFlight != 1 || est.WaitingRetry != 1 || est.Scheduled != 1 || est.Archived != 20 {
		t.Fatalf("stats beyond the limit = %+v; want the same counts, estimated", est)
	}
	if est.OldestVisibleAgeSeconds <= 0 || est.OldestAgeSeconds <= 0 || est.OldestVisibleAgeSeconds > exact.OldestVisibleAgeSeconds+60 {
		t.Fatalf("ages beyond the limit = %v, %v; want those of the exact read (%v, %v)", est.OldestVisibleAgeSeconds, est.OldestAgeSeconds,
			exact.OldestVisibleAgeSeconds, exact.OldestAgeSeconds)
	}
	depths, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range depths {
		if d.Queue == q && (!d.Estimated || d.Visible != 28 || d.InFlight != 1) {
			t.Fatalf("depth beyond the limit = %+v", d)
		}
	}

	// Drained since the statistics were taken: nothing is ready, whatever
	// they still say.
	if gone, err := s.DeleteMany(ctx, q, ids[2:]); err != nil || len(gone) != 28 {
		t.Fatalf("delete the ready messages = %v, %v", gone, err)
	}
	if drained := stats(); drained.Visible != 0 || drained.Depth != 3 || drained.InFlight != 1 || drained.WaitingRetry != 1 || drained.Scheduled != 1 {
		t.Fatalf("stats of a drained queue beyond the limit = %+v; want 3 = 0 ready + 1 + 1 + 1", drained)
	}

	s.SetExactCountLimit(0)
	if back := stats(); back.Estimated || back.Depth != 3 {
		t.Fatalf("stats with the limit restored = %+v; want 3, exact", back)
	}
}

// A partitioned queue (PGMQ's partitioned queues, for the largest
// volumes) is estimated from its partitions' rows.
func TestDepthOfLargePartitionedQueueIsEstimated(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	const q = "parted"
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `DROP TABLE pgmq.q_parted;
		CREATE TABLE pgmq.q_parted (msg_id bigint GENERATED ALWAYS AS IDENTITY, read_ct int NOT NULL DEFAULT 0,
			enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL DEFAULT now(), message jsonb, headers jsonb,
			PRIMARY KEY (msg_id)) PARTITION BY RANGE (msg_id);
		CREATE INDEX ON pgmq.q_parted (vt);
		CREATE TABLE pgmq.q_parted_a PARTITION OF pgmq.q_parted FOR VALUES FROM (1) TO (10);
		CREATE TABLE pgmq.q_parted_b PARTITION OF pgmq.q_parted FOR VALUES FROM (10) TO (100);
		UPDATE pgmq.meta SET is_partitioned = true WHERE queue_name = 'parted'`)
	if _, err := s.SendBatch(ctx, q, msgs(25)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(ctx, q, time.Hour, 1); err != nil || len(got) != 1 {
		t.Fatalf("read = %v, %v", got, err)
	}
	pgtest.SettleRowStats(t, s, "pgmq.q_parted_a", "pgmq.q_parted_b")
	s.SetExactCountLimit(20)
	st, err := s.QueueStats(ctx, q, store.QueueStatsOptions{})
	if err != nil || len(st) != 1 || !st[0].Estimated || st[0].Depth != 25 || st[0].Visible != 24 || st[0].InFlight != 1 {
		t.Fatalf("stats = %+v, %v; want 25 = 24 ready + 1 in flight, estimated", st, err)
	}
}

// An archive of more than ArchiveExactCountLimit rows is not counted at
// each read of the queues (a year of archives, a second a read): its count
// is the statistics system's, or the planner's (pg_class.reltuples) where
// the statistics system has none, as after its counters were reset, and
// says it is an estimate, while the queue's own table is still counted.
func TestLargeArchivesAreEstimated(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	const n = store.ArchiveExactCountLimit + 20_000
	exec(t, s, `INSERT INTO pgmq."a_`+q+`" (msg_id, read_ct, enqueued_at, archived_at, vt, message)
		SELECT g, 1, now(), now(), now(), '{}' FROM generate_series(1, `+strconv.Itoa(n)+`) g`)
	if _, err := s.SendBatch(ctx, q, msgs(3)); err != nil {
		t.Fatal(err)
	}
	pgtest.SettleRowStats(t, s, "pgmq.q_"+q, "pgmq.a_"+q)
	exec(t, s, `ANALYZE pgmq."a_`+q+`"`) // the planner's estimate too
	stats := func() store.QueueStats {
		t.Helper()
		st, err := s.QueueStats(ctx, q, store.QueueStatsOptions{Archive: true})
		if err != nil || len(st) != 1 {
			t.Fatalf("stats = %+v, %v", st, err)
		}
		return st[0]
	}
	near := func(got int64) bool { return got > n*95/100 && got < n*105/100 }
	if st := stats(); !st.ArchivedEstimated || !near(st.Archived) || st.Estimated || st.Depth != 3 {
		t.Fatalf("stats = %+v; want about %d archived, estimated, and the depth of 3 counted", st, n)
	}
	exec(t, s, `SELECT pg_stat_reset_single_table_counters('pgmq."a_`+q+`"'::regclass)`)
	if st := stats(); !st.ArchivedEstimated || !near(st.Archived) {
		t.Fatalf("stats with the archive's statistics reset = %+v; want about %d archived, the planner's estimate", st, n)
	}
}

// An archive of more pages than the exact-count bound is estimated, as a
// queue table is, however few its rows: its rows are as wide as their
// payloads, and counting reads every page.
func TestArchivesOfManyPagesAreEstimated(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	const n = 2000
	exec(t, s, `INSERT INTO pgmq."a_`+q+`" (msg_id, read_ct, enqueued_at, archived_at, vt, message)
		SELECT g, 1, now(), now(), now(), jsonb_build_object('pad', repeat('x', 300)) FROM generate_series(1, `+strconv.Itoa(n)+`) g`)
	pgtest.SettleRowStats(t, s, "pgmq.a_"+q)
	stats := func() store.QueueStats {
		t.Helper()
		st, err := s.QueueStats(ctx, q, store.QueueStatsOptions{Archive: true})
		if err != nil || len(st) != 1 {
			t.Fatalf("stats = %+v, %v", st, err)
		}
		return st[0]
	}
	if st := stats(); st.ArchivedEstimated || st.Archived != n {
		t.Fatalf("stats of an archive of %d rows within the bound = %+v; want them counted", n, st)
	}
	s.SetExactCountPages(10) // the archive takes about 90
	if st := stats(); !st.ArchivedEstimated || st.Archived != n || st.Estimated {
		t.Fatalf("stats of an archive beyond the bound of pages = %+v; want %d archived, estimated, and the queue counted", st, n)
	}
	s.SetExactCountPages(0)
	if st := stats(); st.ArchivedEstimated || st.Archived != n {
		t.Fatalf("stats with the bound restored = %+v; want %d archived, counted", st, n)
	}
}
