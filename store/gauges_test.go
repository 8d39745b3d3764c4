package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// QueueDepths splits a queue's depth as QueueStats does, with its DLQ's
// depth, and agrees with it.
func TestQueueDepths(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	for _, delay := range []time.Duration{0, 0, 0, time.Hour} {
		if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`), Delay: delay}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Read(ctx, q, time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	all, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got *store.QueueDepth
	for i := range all {
		if all[i].Queue == q {
			got = &all[i]
		}
	}
	if got == nil {
		t.Fatalf("QueueDepths lacks %s: %+v", q, all)
	}
	stats, err := s.QueueStats(ctx, q, store.QueueStatsOptions{Archive: true})
	if err != nil {
		t.Fatal(err)
	}
	want := store.QueueDepth{Queue: q, Visible: stats[0].Visible, InFlight: stats[0].InFlight, WaitingRetry: stats[0].WaitingRetry,
		Scheduled: stats[0].Scheduled, DLQDepth: stats[0].DLQDepth, OldestVisibleAgeSeconds: got.OldestVisibleAgeSeconds, OldestAgeSeconds: got.OldestAgeSeconds}
	if *got != want || got.Visible != 2 || got.InFlight != 1 || got.Scheduled != 1 || got.DLQDepth != 2 || got.OldestVisibleAgeSeconds <= 0 || got.OldestAgeSeconds < got.OldestVisibleAgeSeconds {
		t.Fatalf("depth %+v, want %+v (2 visible, 1 in flight, 1 scheduled, 2 dead)", *got, want)
	}
}

// BreakerFailed and BreakerSucceeded say how a call moved the breaker.
func TestBreakerChanges(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("breaker")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 50 * time.Millisecond, MaxCoolOff: time.Second}); err != nil {
		t.Fatal(err)
	}
	fail := func() store.BreakerChange {
		c, err := s.BreakerFailed(ctx, name, "503")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := fail(); c.Changed() || c.To != store.BreakerClosed {
		t.Fatalf("first failure: %+v, want closed and unchanged", c)
	}
	if c := fail(); c.From != store.BreakerClosed || c.To != store.BreakerOpen || !c.Opened() || c.Failures != 2 || c.OpenUntil.IsZero() {
		t.Fatalf("second failure: %+v, want closed to open", c)
	}
	pgtest.Eventually(t, time.Minute, "the probe", func() bool {
		v, err := s.AcquireBreaker(ctx, name, time.Minute)
		return err == nil && v.Probe
	})
	c, err := s.BreakerSucceeded(ctx, name)
	if err != nil || c != (store.BreakerChange{From: store.BreakerHalfOpen, To: store.BreakerClosed}) {
		t.Fatalf("probe success: %+v, %v; want half_open to closed", c, err)
	}
	states, err := s.ListBreakers(ctx, name)
	if err != nil || len(states) != 1 || states[0].State != store.BreakerClosed {
		t.Fatalf("states %+v, %v", states, err)
	}
}

// Over more queues than one statement reads, each queue's depth is its
// own: priority levels are summed, a DLQ is counted from its groups or,
// with its triggers off, read; a queue whose table is gone is left out,
// and one whose DLQ table is gone counts no dead messages.
func TestQueueDepthsOfManyQueues(t *testing.T) {
	// Not parallel: its hundreds of statements share one context of two
	// minutes, which beside the package's other tests on a busy machine
	// they outlasted.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	want := map[string]store.QueueDepth{}
	send := func(q string, n int, delay time.Duration) {
		t.Helper()
		for range n {
			if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`), Delay: delay}); err != nil {
				t.Fatal(err)
			}
		}
	}
	create := func(q string) {
		t.Helper()
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 150 {
		q := fmt.Sprintf("many_%03d", i)
		create(q)
		send(q, i%4, 0)
		send(q, i%3, time.Hour)
		if i%2 == 0 && i%5 > 0 {
			pgtest.DeadLetterN(t, s, q, i%5, pgtest.DeadSpec{})
		}
		want[q] = store.QueueDepth{Queue: q, Visible: int64(i % 4), Scheduled: int64(i % 3), DLQDepth: int64((1 - i%2) * (i % 5))}
	}
	prio := "many_prio"
	if err := s.CreatePriorityQueue(ctx, prio, 3); err != nil {
		t.Fatal(err)
	}
	send(store.PriorityQueueName(prio, 0), 1, 0)
	send(store.PriorityQueueName(prio, 2), 2, 0)
	if got, err := s.Read(ctx, store.PriorityQueueName(prio, 2), time.Minute, 1); err != nil || len(got) != 1 {
		t.Fatalf("read %d, %v", len(got), err)
	}
	want[prio] = store.QueueDepth{Queue: prio, Visible: 2, InFlight: 1, Priorities: 3}

	untracked := "many_untracked"
	create(untracked)
	pgtest.DeadLetterN(t, s, untracked, 3, pgtest.DeadSpec{})
	exec(t, s, `ALTER TABLE pgmq.q_many_untracked_dlq DISABLE TRIGGER pgbus_dlq_groups_ins`)
	pgtest.DeadLetterN(t, s, untracked, 1, pgtest.DeadSpec{}) // not counted in the groups: only a read finds 4
	want[untracked] = store.QueueDepth{Queue: untracked, DLQDepth: 4}

	create("many_gone")
	exec(t, s, `DROP TABLE pgmq.q_many_gone`)
	create("many_gonedlq")
	send("many_gonedlq", 1, 0)
	exec(t, s, `DROP TABLE pgmq.q_many_gonedlq_dlq`)
	want["many_gonedlq"] = store.QueueDepth{Queue: "many_gonedlq", Visible: 1}

	all, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Errorf("depths of %d queues, want %d", len(all), len(want))
	}
	for _, got := range all {
		if (got.Visible > 0) != (got.OldestVisibleAgeSeconds > 0) {
			t.Errorf("%s: %d visible, the oldest %v s old", got.Queue, got.Visible, got.OldestVisibleAgeSeconds)
		}
		if depth := got.Visible + got.InFlight + got.WaitingRetry + got.Scheduled; (depth > 0) != (got.OldestAgeSeconds > 0) {
			t.Errorf("%s: %d messages, the oldest %v s old", got.Queue, depth, got.OldestAgeSeconds)
		}
		got.OldestVisibleAgeSeconds, got.OldestAgeSeconds = 0, 0
		if w, ok := want[got.Queue]; !ok || got != w {
			t.Errorf("depth %+v, want %+v", got, w)
		}
	}
}

func exec(t *testing.T, s *store.Store, sql string) {
	t.Helper()
	if _, err := s.Pool().Exec(testContext(t), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// A queue dropped outside pgbus (its tables and its PGMQ entry gone, as
// PGMQ's drop_queue leaves them) whose DLQ holds messages stays in every
// queue's stats and depths, marked dropped with its DLQ's depth, whether
// pgbus still has its entry or not; one whose DLQ is empty is left out.
func TestDroppedQueueWithDeadMessagesIsListed(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	for _, q := range []string{"live", "gone", "orphan", "emptied"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.DeadLetterN(t, s, "gone", 2, pgtest.DeadSpec{})
	pgtest.DeadLetterN(t, s, "orphan", 3, pgtest.DeadSpec{})
	if _, err := s.Send(ctx, "live", store.NewMessage{Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"gone", "orphan", "emptied"} {
		pgtest.DropOutside(t, s, q)
	}
	exec(t, s, `DELETE FROM pgbus.queues WHERE queue_name IN ('orphan', 'emptied')`)

	stats, err := s.QueueStats(ctx, "", store.QueueStatsOptions{Archive: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range stats {
		got = append(got, fmt.Sprintf("%s dropped=%v depth=%d dlq=%s:%d", st.Queue, st.Dropped, st.Depth, st.DLQ, st.DLQDepth))
	}
	want := []string{"gone dropped=true depth=0 dlq=gone_dlq:2", "live dropped=false depth=1 dlq=live_dlq:0", "orphan dropped=true depth=0 dlq=orphan_dlq:3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats:\n%s\nwant\n%s", got, want)
	}
	depths, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, d := range depths {
		got = append(got, fmt.Sprintf("%s dropped=%v depth=%d dlq=%s:%d", d.Queue, d.Dropped, d.Visible+d.InFlight+d.WaitingRetry+d.Scheduled, store.DLQName(d.Queue), d.DLQDepth))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("depths:\n%s\nwant\n%s", got, want)
	}
	if alone, err := s.QueueStats(ctx, "gone", store.QueueStatsOptions{}); err != nil || len(alone) != 1 || !alone[0].Dropped || alone[0].DLQDepth != 2 {
		t.Errorf("stats of the dropped queue alone: %+v, %v; want it dropped with 2 dead", alone, err)
	}
	if alone, err := s.QueueStats(ctx, "emptied", store.QueueStatsOptions{}); err != nil || len(alone) != 0 {
		t.Errorf("stats of a dropped queue with an empty DLQ: %+v, %v; want none", alone, err)
	}
}

// A database whose one queue lost its table since it was listed has no
// depths to report, and says so without an error.
func TestQueueDepthsOfOneQueueGone(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	if err := s.CreateQueue(testContext(t), "only"); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `DROP TABLE pgmq.q_only`)
	depths, err := s.QueueDepths(testContext(t))
	if err != nil || len(depths) != 0 {
		t.Fatalf("depths %+v, %v; want none and no error", depths, err)
	}
}

// A table dropped while the depths are read, after they found it, is left
// out, and the tables read with it are counted: the read waits on the drop's
// lock, and finds the table gone once the drop commits.
func TestQueueDepthsOfATableDroppedDuringTheRead(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	for i, q := range []string{"mid_a", "mid_b", "mid_c"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SendBatch(ctx, q, msgs(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	var depths []store.QueueDepth
	err := dropDuring(t, s, "q_mid_b", func() (err error) {
		depths, err = s.QueueDepths(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range depths {
		got = append(got, fmt.Sprintf("%s:%d", d.Queue, d.Visible))
	}
	if fmt.Sprint(got) != "[mid_a:1 mid_c:3]" {
		t.Fatalf("depths %v, want mid_a:1 mid_c:3", got)
	}
}

// dropDuring runs read while table of schema pgmq is dropped: the drop
// takes its lock first, read waits on it, and the drop commits.
func dropDuring(t *testing.T, s *store.Store, table string, read func() error) error {
	t.Helper()
	ctx := testContext(t)
	drop, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer drop.Rollback(ctx) //nolint:errcheck
	if _, err := drop.Exec(ctx, `DROP TABLE pgmq.`+table); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- read() }()
	pgtest.Eventually(t, time.Minute, "the read to wait on the drop's lock", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 1
	})
	if err := drop.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return <-done
}

// The stats of one queue whose table is dropped while they are read are
// read again: a priority queue that lost a level counts the levels left, a
// queue that lost its table is dropped with its DLQ's dead messages; not
// "does not exist".
func TestQueueStatsOfOneQueueDroppedDuringTheRead(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	if err := s.CreatePriorityQueue(ctx, "race_p", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendBatch(ctx, "race_p_p0", msgs(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, "race_q"); err != nil {
		t.Fatal(err)
	}
	pgtest.DeadLetterN(t, s, "race_q", 2, pgtest.DeadSpec{})
	for _, c := range []struct{ queue, table, want string }{
		{"race_p", "q_race_p_p1", "race_p depth=1 dropped=false dlq=0"},
		{"race_q", "q_race_q", "race_q depth=0 dropped=true dlq=2"},
	} {
		var stats []store.QueueStats
		err := dropDuring(t, s, c.table, func() (err error) {
			stats, err = s.QueueStats(ctx, c.queue, store.QueueStatsOptions{Archive: true})
			return err
		})
		var got []string
		for _, st := range stats {
			got = append(got, fmt.Sprintf("%s depth=%d dropped=%v dlq=%d", st.Queue, st.Depth, st.Dropped, st.DLQDepth))
		}
		if err != nil || fmt.Sprint(got) != "["+c.want+"]" {
			t.Errorf("stats of %s, %s dropped during the read: %v, %v; want %s", c.queue, c.table, got, err, c.want)
		}
	}
}

// Partitioned PGMQ queues (read one to a statement, since each holds the
// locks of all its partitions) are counted with the others.
func TestQueueDepthsOfPartitionedQueues(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	want := map[string]int64{}
	for i := range 4 {
		q := fmt.Sprintf("part_%d", i)
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			exec(t, s, fmt.Sprintf(`DROP TABLE pgmq.q_%[1]s;
				CREATE TABLE pgmq.q_%[1]s (msg_id bigint GENERATED ALWAYS AS IDENTITY, read_ct int NOT NULL DEFAULT 0,
					enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL DEFAULT now(), message jsonb, headers jsonb,
					PRIMARY KEY (msg_id)) PARTITION BY RANGE (msg_id);
				CREATE TABLE pgmq.q_%[1]s_a PARTITION OF pgmq.q_%[1]s FOR VALUES FROM (1) TO (3);
				CREATE TABLE pgmq.q_%[1]s_b PARTITION OF pgmq.q_%[1]s FOR VALUES FROM (3) TO (100);
				UPDATE pgmq.meta SET is_partitioned = true WHERE queue_name = '%[1]s'`, q))
		}
		if _, err := s.SendBatch(ctx, q, msgs(i+3)); err != nil {
			t.Fatal(err)
		}
		want[q] = int64(i + 3)
	}
	depths, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, d := range depths {
		got[d.Queue] = d.Visible
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("visible by queue %v, want %v", got, want)
	}
}

// A priority queue is dropped only when all its levels' tables are gone:
// with one level left, that level's messages are counted. A DLQ named
// after a level (another client's, or one made for it) does not make the
// level a dropped queue.
func TestPriorityLevelsDroppedOneByOne(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	if err := s.CreatePriorityQueue(ctx, "lv", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendBatch(ctx, "lv_p1", msgs(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDLQ(ctx, "lv_p0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendBatch(ctx, "lv_p0_dlq", msgs(1)); err != nil {
		t.Fatal(err)
	}
	dead, err := s.SendBatch(ctx, "lv_p1", msgs(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeadLetterMany(ctx, "lv_p1", store.DLQName("lv"), store.SourceWorker, []store.DeadLetterItem{{MsgID: dead[0],
		Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E"}}}); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		stats, err := s.QueueStats(ctx, "", store.QueueStatsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		depths, err := s.QueueDepths(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range stats {
			out = append(out, fmt.Sprintf("%s dropped=%v levels=%d visible=%d dead=%d", st.Queue, st.Dropped, st.Priorities, st.Visible, st.DLQDepth))
		}
		for _, d := range depths {
			out = append(out, fmt.Sprintf("depth %s dropped=%v visible=%d dead=%d", d.Queue, d.Dropped, d.Visible, d.DLQDepth))
		}
		return fmt.Sprint(out)
	}
	pgtest.DropOutside(t, s, "lv_p0")
	if got, want := read(), "[lv dropped=false levels=2 visible=2 dead=1 depth lv dropped=false visible=2 dead=1]"; got != want {
		t.Errorf("one level dropped:\n%s\nwant\n%s", got, want)
	}
	pgtest.DropOutside(t, s, "lv_p1")
	if got, want := read(), "[lv dropped=true levels=2 visible=0 dead=1 depth lv dropped=true visible=0 dead=1]"; got != want {
		t.Errorf("both levels dropped:\n%s\nwant\n%s", got, want)
	}
}

// Every queue's stats, read many tables to a statement, agree with those
// read queue by queue, with the archives or without (as health and the
// overview read them): for plain and priority queues, ready, scheduled,
// running and retrying messages, archived and sent ones, paused settings,
// recent counters, untracked and dropped DLQs.
func TestQueueStatsFromDepthsAgree(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	for _, q := range []string{"agree_a", "agree_b", "agree_dropped", "agree_noarch"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreatePriorityQueue(ctx, "agree_p", 3); err != nil {
		t.Fatal(err)
	}
	send := func(q string, n int, delay time.Duration) []int64 {
		t.Helper()
		var ids []int64
		for range n {
			id, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`), Delay: delay})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	if _, err := s.ArchiveMany(ctx, "agree_a", send("agree_a", 4, 0)[:1]); err != nil {
		t.Fatal(err)
	}
	send("agree_a", 2, time.Hour)
	send("agree_b", 4, 0)
	if got, err := s.Read(ctx, "agree_b", time.Minute, 2); err != nil || len(got) != 2 {
		t.Fatalf("read %d, %v", len(got), err)
	}
	if _, err := s.RetryMany(ctx, "agree_b", []store.RetryItem{{MsgID: 1, Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "E"}}}); err != nil {
		t.Fatal(err)
	}
	send("agree_p_p0", 1, 0)
	send("agree_p_p2", 2, 0)
	// Archives dropped by hand: the queues are read all the same.
	send("agree_noarch", 2, 0)
	exec(t, s, `DROP TABLE pgmq.a_agree_noarch, pgmq.a_agree_p_p1`)
	pgtest.DeadLetterN(t, s, "agree_a", 2, pgtest.DeadSpec{})
	pgtest.DeadLetterN(t, s, "agree_dropped", 3, pgtest.DeadSpec{})
	exec(t, s, `DROP TABLE pgmq.q_agree_dropped, pgmq.a_agree_dropped; DELETE FROM pgmq.meta WHERE queue_name = 'agree_dropped';
		ALTER TABLE pgmq.q_agree_a_dlq DISABLE TRIGGER pgbus_dlq_groups_ins`)
	pgtest.DeadLetterN(t, s, "agree_a", 1, pgtest.DeadSpec{}) // counted by a read of the DLQ only
	if _, err := s.SetPaused(ctx, "agree_b", true); err != nil {
		t.Fatal(err)
	}
	if err := s.AddStats(ctx, []store.StatsDelta{{Minute: time.Now().Truncate(time.Minute), Queue: "agree_a", Kind: "k", Succeeded: 7, Failed: 2, LatencyCount: 7, LatencySumMS: 70,
		LatencyBuckets: [store.LatencyBuckets]int64{3, 4}}}); err != nil {
		t.Fatal(err)
	}

	// read reads every queue's stats at once, or queue by queue.
	read := func(opts store.QueueStatsOptions, queues ...string) string {
		t.Helper()
		var stats []store.QueueStats
		for _, q := range append(queues, "")[:max(len(queues), 1)] {
			some, err := s.QueueStats(ctx, q, opts)
			if err != nil {
				t.Fatal(err)
			}
			stats = append(stats, some...)
		}
		var out []string
		for _, st := range stats {
			if (st.OldestAgeSeconds > 0) != (st.Depth > 0) || (st.OldestVisibleAgeSeconds > 0) != (st.Visible > 0) {
				t.Errorf("%s: %d messages, %d visible, the oldest %v s and %v s old", st.Queue, st.Depth, st.Visible, st.OldestAgeSeconds, st.OldestVisibleAgeSeconds)
			}
			st.OldestAgeSeconds, st.OldestVisibleAgeSeconds = 0, 0
			if (st.Archived > 0) != (opts.Archive && st.Queue == "agree_a") || (st.TotalSent > 0) != ((opts.Archive || opts.TotalSent) && !st.Dropped) {
				t.Errorf("%+v: %s has %d archived of %d sent", opts, st.Queue, st.Archived, st.TotalSent)
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		return strings.Join(out, "\n")
	}
	names := []string{"agree_a", "agree_b", "agree_dropped", "agree_noarch", "agree_p"}
	archive := store.QueueStatsOptions{Archive: true}
	for _, opts := range []store.QueueStatsOptions{{}, {TotalSent: true}, archive} {
		if all, oneByOne := read(opts), read(opts, names...); all != oneByOne {
			t.Fatalf("%+v: stats of all queues:\n%s\nqueue by queue:\n%s", opts, all, oneByOne)
		}
	}
	fromDepths, withArchive := read(store.QueueStatsOptions{}), read(archive)
	if !strings.Contains(withArchive, `"queue":"agree_a","depth":5,`) || !strings.Contains(withArchive, `"archived":1,"total_sent":9,`) || strings.Count(withArchive, `"total_sent":`) != 5 ||
		!strings.Contains(withArchive, `"queue":"agree_noarch","depth":2,`) || !strings.Contains(withArchive, `"queue":"agree_p","depth":3,`) {
		t.Fatalf("stats with the archives lack agree_a's 1 archived of 9 sent (3 of them dead), or the queues whose archives are gone:\n%s", withArchive)
	}
	for _, want := range []string{`"queue":"agree_b","depth":4,"visible":2,"in_flight":1,"waiting_retry":1`, `"queue":"agree_dropped"`, `"dropped":true`,
		`"queue":"agree_p","depth":3`, `"priorities":3`, `"dlq_depth":3`, `"succeeded":7`, `"paused":true`} {
		if !strings.Contains(fromDepths, want) {
			t.Errorf("the stats lack %s:\n%s", want, fromDepths)
		}
	}
}

// A read of every DLQ that DLQs dropped one after another cut short lists
// the DLQs again each time, and reads those left.
func TestDeadListOfDLQsDroppedOneAfterAnother(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	for _, q := range []string{"gone_a", "gone_b", "kept_c"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{})
	}
	drops := make([]pgx.Tx, 2)
	for i, table := range []string{"q_gone_a_dlq", "q_gone_b_dlq"} {
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, `DROP TABLE pgmq.`+table); err != nil {
			t.Fatal(err)
		}
		drops[i] = tx
	}
	done := make(chan error, 1)
	var page store.DeadPage
	go func() {
		var err error
		page, err = s.ListDead(ctx, store.DeadFilter{}, "", 10)
		done <- err
	}()
	for _, tx := range drops {
		pgtest.Eventually(t, time.Minute, "the read to wait on a drop's lock", func() bool {
			return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 1
		})
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the list failed: %v", err)
	}
	if len(page.Items) != 1 || page.Items[0].DLQ != "kept_c_dlq" {
		t.Fatalf("want the dead message of kept_c only: %+v", page.Items)
	}
}

// A message that waited out a delay was not waiting for a worker meanwhile:
// the age of the oldest ready message counts from when it became ready,
// and the oldest message's age from when it was sent.
func TestOldestReadyAgeCountsFromReady(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := uniqueName("ready")
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
	if _, err := s.SendBatch(ctx, q, msgs(1)); err != nil {
		t.Fatal(err)
	}
	// Sent an hour ago with a delay that ended two seconds ago.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" SET enqueued_at = now() - interval '1 hour', vt = now() - interval '2 seconds'`); err != nil {
		t.Fatal(err)
	}
	stats, err := s.QueueStats(ctx, q, store.QueueStatsOptions{})
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats of %s: %+v, %v", q, stats, err)
	}
	if st := stats[0]; st.OldestVisibleAgeSeconds < 2 || st.OldestVisibleAgeSeconds > 600 || st.OldestAgeSeconds < 3600 {
		t.Fatalf("oldest ready %.0fs, oldest %.0fs; want about 2s ready and an hour old", st.OldestVisibleAgeSeconds, st.OldestAgeSeconds)
	}
}
