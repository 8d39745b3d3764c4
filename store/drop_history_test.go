package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A worker's retry under way as a queue is dropped writes a failure for
// one of its messages: the drop waits for it, and takes that history with
// the queue rather than leave it to a queue made again under the name.
func TestDropQueueTakesTheFailureOfARetryItWaitedFor(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := uniqueName("dropq")
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	ids, err := s.SendBatch(ctx, q, msgs(3))
	if err != nil {
		t.Fatal(err)
	}
	worker, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = worker.Rollback(context.Background()) }()
	var pid int
	if err := worker.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Exec(ctx, `UPDATE `+pgx.Identifier{"pgmq", "q_" + q}.Sanitize()+` SET vt = now() WHERE msg_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message) VALUES ($1, $2, 1, 'E', 'failed')`, q, ids[0]); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.DropQueue(ctx, q) }()
	pgtest.Eventually(t, time.Minute, "the drop to wait for the worker's transaction", func() bool {
		var waiting bool
		err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)))`, pid).Scan(&waiting)
		return err == nil && waiting
	})
	if err := worker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drop: %v", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1`, q); n != 0 {
		t.Errorf("%d failures of the dropped queue's messages left", n)
	}
}
