package store_test

import (
	"testing"
	"time"

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
	pid, commit := retryUnderWay(t, s, q, ids[0])
	done := make(chan error, 1)
	go func() { done <- s.DropQueue(ctx, q) }()
	pgtest.Eventually(t, time.Minute, "the drop to wait for the worker's transaction", func() bool { return blocks(t, s, pid, "") })
	commit()
	if err := <-done; err != nil {
		t.Fatalf("drop: %v", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1`, q); n != 0 {
		t.Errorf("%d failures of the dropped queue's messages left", n)
	}
}
