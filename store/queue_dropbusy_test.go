package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestDropGetsThroughOverlappingReads: reads of a queue that overlap,
// each holding its table for 300 ms and one beginning every 150 ms, keep
// a session holding the table that lets go no sooner than 150 ms from
// any moment. A drop whose tries were each 100 ms never got the table
// while they went on, and gave up; one whose tries grow gets through,
// as later reads wait behind a try, and drops the queue.
func TestDropGetsThroughOverlappingReads(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, s, "dropbusy")
	readers, err := pgxpool.New(ctx, pgtest.WithParam(t, pgtest.URL(t), "pool_max_conns", "40"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(readers.Close)

	read := `SELECT count(*), pg_sleep(0.3) FROM ` + pgx.Identifier{"pgmq", "q_" + q}.Sanitize()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	wg.Go(func() {
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				wg.Go(func() { _, _ = readers.Exec(ctx, read) })
			}
		}
	})
	pgtest.Eventually(t, time.Minute, "two reads to hold the queue's table at once", func() bool {
		var n int
		err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE granted AND mode = 'AccessShareLock'
			AND relation = to_regclass($1)`, pgx.Identifier{"pgmq", "q_" + q}.Sanitize()).Scan(&n)
		return err == nil && n >= 2
	})

	if err := s.DropQueue(store.WithStatementTimeout(ctx, 20*time.Second), q); err != nil {
		t.Fatalf("drop of a queue under overlapping 300 ms reads: %v; want it to get its tables between them", err)
	}
	if exists, err := s.QueueExists(ctx, q); err != nil || exists {
		t.Fatalf("queue %s after its drop: exists %v (%v)", q, exists, err)
	}
}
