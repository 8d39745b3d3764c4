package store_test

import (
	"context"
	"testing"
	"time"

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
	store.SetStatsPruneBatch(t, 4) // 31 counters, over 8 batches
	s := pgtest.Store(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded, dead_lettered)
		SELECT date_trunc('minute', now()) - m * interval '1 minute', $1, '', 3, 1 FROM generate_series(0, 30) m`, q); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM pgbus.stats_minute WHERE queue_name = $1 AND minute = date_trunc('minute', now()) - interval '30 minutes' FOR UPDATE`, q); err != nil {
		t.Fatal(err)
	}
	dropped := make(chan error, 1)
	go func() { dropped <- s.DropQueue(ctx, q) }()
	var pid int
	pgtest.Eventually(t, 30*time.Second, "the drop's delete of counters waiting for the counter held", func() bool {
		err := s.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%stats_minute%' AND query NOT LIKE '%pg_stat_activity%'`).Scan(&pid)
		return err == nil
	})
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
	store.SetStatsPruneBatch(t, 4) // 31 counters, over 8 batches
	s := pgtest.Store(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded, dead_lettered)
		SELECT date_trunc('minute', now()) - m * interval '1 minute', $1, '', 3, 1 FROM generate_series(0, 30) m`, q); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM pgbus.stats_minute WHERE queue_name = $1 AND minute = date_trunc('minute', now()) - interval '30 minutes' FOR UPDATE`, q); err != nil {
		t.Fatal(err)
	}
	dropped := make(chan error, 1)
	go func() { dropped <- s.DropQueue(ctx, q) }()
	pgtest.Eventually(t, 30*time.Second, "the drop's delete of counters waiting for the counter held", func() bool {
		var pid int
		err := s.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%stats_minute%' AND query NOT LIKE '%pg_stat_activity%'`).Scan(&pid)
		return err == nil
	})
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
