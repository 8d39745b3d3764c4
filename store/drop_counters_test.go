package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue's drop deletes its counters once its tables are dropped and the
// drop committed, so that the exclusive locks of the dropped tables (which
// every listing of queues waits for) are not held while a year of counters
// goes: here the delete waits for a counter another transaction holds, and
// the drop's session holds no lock on any table meanwhile. The counters all
// go, over several batches, and the queue made again under the name
// starts at zero.
func TestDropQueueDeletesItsCountersAfterTheDrop(t *testing.T) {
	s, ctx := pgtest.Store(t), testContext(t)
	q, tx, dropped, pid := dropWaitingOnACounter(t, s)
	var held []string
	rows, err := s.Pool().Query(ctx, `SELECT relation::regclass::text || ' ' || mode FROM pg_locks
		WHERE pid = $1 AND locktype = 'relation' AND mode = 'AccessExclusiveLock'`, pid)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		t.Errorf("while its counters are deleted, the drop's session holds %v: every listing of queues waits for it", held)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-dropped; err != nil {
		t.Fatalf("drop: %v", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = $1`, q); n != 0 {
		t.Fatalf("%d counters of the dropped queue left; want none", n)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	series, err := s.Throughput(ctx, q, store.ThroughputSpan{First: time.Now().Add(-time.Hour), Step: time.Minute, Buckets: 61})
	if err != nil {
		t.Fatal(err)
	}
	for _, sr := range series {
		for i, b := range sr.Buckets {
			if b.Total() != 0 {
				t.Fatalf("the queue made again shows the dropped one's outcomes in bucket %d: %+v", i, b)
			}
		}
	}
}

// Counters are stored under the start of their minute: a queue made again
// under a dropped queue's name writes its counters of the drop's minute
// under the same key as the dropped queue's. Those the new queue wrote
// while the drop's counters were being deleted stay its own.
func TestDropQueueKeepsTheCountersOfTheQueueMadeAgainInTheDropsMinute(t *testing.T) {
	s, ctx := pgtest.Store(t), testContext(t)
	q, tx, dropped, _ := dropWaitingOnACounter(t, s)
	// The drop committed; the queue is made again and counts an outcome
	// in the current minute, which the drop's batches have not reached.
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	var minute time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT date_trunc('minute', clock_timestamp())`).Scan(&minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AddStats(ctx, []store.StatsDelta{{Minute: minute, Queue: q, Succeeded: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-dropped; err != nil {
		t.Fatalf("drop: %v", err)
	}
	var succeeded int64
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(succeeded), 0) FROM pgbus.stats_minute WHERE queue_name = $1`, q).Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	if succeeded != 1 {
		t.Fatalf("the queue made again has %d outcomes counted; want the 1 it counted while the dropped queue's counters were deleted", succeeded)
	}
}

// dropWaitingOnACounter drops a new queue with 31 minutes of counters,
// deleted 4 a batch, and returns once the drop's delete of its counters
// waits for the oldest, which tx holds until the test rolls it back: the
// queue, tx, the drop's result and the backend pid of the waiting drop.
func dropWaitingOnACounter(t *testing.T, s *store.Store) (q string, tx pgx.Tx, dropped chan error, pid int) {
	t.Helper()
	store.SetStatsPruneBatch(t, 4) // 31 counters, over 8 batches
	ctx := testContext(t)
	q = newQueue(t, s)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded, dead_lettered)
		SELECT date_trunc('minute', now()) - m * interval '1 minute', $1, '', 3, 1 FROM generate_series(0, 30) m`, q); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	var held int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM pgbus.stats_minute WHERE queue_name = $1 AND minute = date_trunc('minute', now()) - interval '30 minutes' FOR UPDATE`, q).Scan(&held); err != nil {
		t.Fatal(err)
	}
	dropped = make(chan error, 1)
	go func() { dropped <- s.DropQueue(ctx, q) }()
	// The waiter is the one blocked by tx's session: the shared cluster
	// runs other tests' statements on the counters too.
	pgtest.Eventually(t, 30*time.Second, "the drop's delete of counters waiting for the counter held", func() bool {
		err := s.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE '%stats_minute%' AND $1 = ANY(pg_blocking_pids(pid))`, held).Scan(&pid)
		return err == nil
	})
	return q, tx, dropped, pid
}

// Counters a worker counted before its queue was dropped and writes after
// the drop (it writes them every few seconds) are left out: the queue
// made again under the name starts at zero, as the drop says. Counters of
// a queue that exists are kept.
func TestCountersOfADroppedQueueAreLeftOut(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := pgtest.NewQueue(t, s, "gone")
	kept := pgtest.NewQueue(t, s, "kept")
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	minute := time.Now().UTC().Truncate(time.Minute)
	if err := s.AddStats(ctx, []store.StatsDelta{{Minute: minute, Queue: q, Kind: "k", Succeeded: 20}, {Minute: minute, Queue: kept, Kind: "k", Succeeded: 3}}); err != nil {
		t.Fatal(err)
	}
	pgtest.CreateQueue(t, s, q)
	sum := func(queue string) int64 {
		var n int64
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(succeeded), 0) FROM pgbus.stats_minute WHERE queue_name = $1`, queue).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := sum(q); n != 0 {
		t.Errorf("the queue made again after its drop counts %d outcomes of the dropped one, want 0", n)
	}
	if n := sum(kept); n != 3 {
		t.Errorf("a queue that exists counts %d outcomes, want the 3 written", n)
	}
}

// A worker counts its outcomes per table it read the messages from: the
// counts of a queue's levels, read from two tables, add up under the
// queue; those read from the table of a queue dropped and made again
// since are left out, and the queue made again shows none of them. As
// much when the results are read as text.
func TestCountersOfTheTablesReadAddUpAndThoseOfADroppedTableAreLeftOut(t *testing.T) {
	t.Parallel()
	for _, mode := range append([]string{"default"}, textModes...) {
		t.Run(mode, func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			if mode != "default" {
				url = pgtest.WithParam(t, url, "default_query_exec_mode", mode)
			}
			s, ctx := pgtest.OpenStore(t, url), testContext(t)
			levels, again := uniqueName("levels"), uniqueName("again")
			if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
				t.Fatal(err)
			}
			pgtest.CreateQueue(t, s, again)
			table := func(physical string) uint32 {
				t.Helper()
				if _, err := s.Send(ctx, physical, store.NewMessage{Payload: []byte(`1`)}); err != nil {
					t.Fatal(err)
				}
				msgs, err := s.Read(ctx, physical, time.Minute, 1)
				if err != nil || len(msgs) != 1 || msgs[0].Table == 0 {
					t.Fatalf("read of %s = %+v, %v; want one message with its table", physical, msgs, err)
				}
				return msgs[0].Table
			}
			p0, p1, old := table(store.PriorityQueueName(levels, 0)), table(store.PriorityQueueName(levels, 1)), table(again)
			if p0 == p1 {
				t.Fatalf("the two levels' messages name one table, %d", p0)
			}
			if err := s.DropQueue(ctx, again); err != nil {
				t.Fatal(err)
			}
			pgtest.CreateQueue(t, s, again)
			minute := time.Now().UTC().Truncate(time.Minute)
			if err := s.AddStats(ctx, []store.StatsDelta{
				{Minute: minute, Queue: levels, Table: p0, Kind: "k", Succeeded: 2, LatencyCount: 2, LatencyBuckets: [store.LatencyBuckets]int64{3: 2}},
				{Minute: minute, Queue: levels, Table: p1, Kind: "k", Succeeded: 5, LatencyCount: 1, LatencyBuckets: [store.LatencyBuckets]int64{3: 1}},
				{Minute: minute, Queue: again, Table: old, Kind: "k", Succeeded: 20},
			}); err != nil {
				t.Fatal(err)
			}
			if n := pgtest.Int(t, s, `SELECT coalesce(sum(succeeded), 0)::int FROM pgbus.stats_minute WHERE queue_name = $1`, again); n != 0 {
				t.Errorf("the queue made again shows %d outcomes counted from the dropped queue's table, want 0", n)
			}
			if n := pgtest.Int(t, s, `SELECT coalesce(sum(succeeded * 100 + latency_buckets[4]), 0)::int FROM pgbus.stats_minute WHERE queue_name = $1`, levels); n != 703 {
				t.Errorf("the queue of two levels shows %d succeeded and %d latencies in their bucket, want 7 and 3", n/100, n%100)
			}
		})
	}
}

// A flush of a worker's counts that runs while a drop of their queue is
// under way writes none of the dropped queue's counts, which the drop,
// deleting the counters it saw, would leave to the queue made again under
// the name; nor does it wait for the drop: it leaves them for its next
// flush, which, the drop over, leaves them out. Here the drop waits, its
// tables dropped, for a counter of its queue another transaction holds.
// Counts of another queue written with them land at once.
func TestCountsFlushedWhileTheirQueueIsDroppedAreLeftOut(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q, kept := pgtest.NewQueue(t, s, "dropping"), pgtest.NewQueue(t, s, "kept")
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Read(ctx, q, time.Minute, 1)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("read of %s = %+v, %v; want one message", q, msgs, err)
	}
	// A counter an hour ahead, which the drop deletes in its transaction.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded)
		VALUES (date_trunc('minute', now()) + interval '1 hour', $1, '', 1)`, q); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	var holder int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM pgbus.stats_minute WHERE queue_name = $1 FOR UPDATE`, q).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	dropped := make(chan error, 1)
	go func() { dropped <- s.DropQueue(ctx, q) }()
	var dropper int
	pgtest.Eventually(t, 30*time.Second, "the drop to wait for the counter held", func() bool {
		return s.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND $1 = ANY(pg_blocking_pids(pid))`, holder).Scan(&dropper) == nil
	})
	minute := time.Now().UTC().Truncate(time.Minute)
	// The flush does not wait for the drop: it writes the counters of the
	// queue that stays, and leaves those of the one being dropped for
	// later. (Waiting, it held up the counters of every queue of the
	// flush, as long as the drop waited for its tables.)
	flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = s.AddStats(flushCtx, []store.StatsDelta{
		{Minute: minute, Queue: q, Table: msgs[0].Table, Kind: "k", Succeeded: 20},
		{Minute: minute, Queue: q, Kind: "k", Failed: 4},
		{Minute: minute, Queue: kept, Kind: "k", Succeeded: 3},
	})
	deferred, ok := errors.AsType[*store.StatsDeferredError](err)
	if !ok || len(deferred.Deferred) != 2 || deferred.Deferred[0].Queue != q || deferred.Deferred[1].Queue != q {
		t.Fatalf("flush while %s is dropped: %v; want the counters of %s left for later, and those of %s written", q, err, q, kept)
	}
	select {
	case err := <-dropped:
		t.Fatalf("the drop ended (%v) while the counter it deletes was held", err)
	default:
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-dropped; err != nil {
		t.Fatalf("drop: %v", err)
	}
	// The next flush, once the drop is over, leaves them out.
	if err := s.AddStats(ctx, deferred.Deferred); err != nil {
		t.Fatalf("the flush of the counters left for later, after the drop: %v", err)
	}
	pgtest.CreateQueue(t, s, q)
	sum := func(queue string) int {
		return pgtest.Int(t, s, `SELECT coalesce(sum(succeeded + failed), 0)::int FROM pgbus.stats_minute WHERE queue_name = $1`, queue)
	}
	if n := sum(q); n != 0 {
		t.Errorf("the queue made again after its drop shows %d outcomes flushed for the dropped one while it was dropped, want 0", n)
	}
	if n := sum(kept); n != 3 {
		t.Errorf("a queue that exists shows %d outcomes, want the 3 flushed", n)
	}
}
