package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// queueWithRecords makes a queue whose messages have failure history and
// an idempotency key, and returns it with the id of the keyed message.
func queueWithRecords(t *testing.T, s *store.Store) (string, int64) {
	t.Helper()
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := sendN(t, s, q, 3)
	items := make([]store.RetryItem, len(ids))
	for i, id := range ids {
		items[i] = store.RetryItem{MsgID: id, Failure: store.Failure{Attempt: 1, ErrorClass: "Boom", ErrorMessage: "boom"}}
	}
	if done, err := s.RetryMany(ctx, q, items); err != nil || len(done) != len(ids) {
		t.Fatalf("record failures: %v, %v", done, err)
	}
	keyed, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return q, keyed
}

// lockARecordOf begins a transaction that holds a row of table (of queue
// q) locked, as a reader of it FOR UPDATE would, and returns its backend
// pid and its rollback, which the end of the test runs too.
func lockARecordOf(t *testing.T, s *store.Store, table, q string) (int, func()) {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := func() { _ = tx.Rollback(context.Background()) }
	t.Cleanup(release)
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var locked int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+table+` WHERE queue_name = $1 LIMIT 1 FOR UPDATE) x`, q).Scan(&locked); err != nil || locked != 1 {
		t.Fatalf("lock a row of %s of %s: %d, %v", table, q, locked, err)
	}
	return pid, release
}

// records counts the failure history and idempotency keys of queue q.
func records(t *testing.T, s *store.Store, q string) int {
	t.Helper()
	return pgtest.Int(t, s, `SELECT (SELECT count(*) FROM pgbus.failures WHERE queue_name = $1) + (SELECT count(*) FROM pgbus.idempotency_keys WHERE queue_name = $1)`, q)
}

// A drop deletes the failure history and idempotency keys of its queue's
// messages once it committed, not inside the transaction that holds its
// tables' exclusive locks, which every read and write of the queue waits
// for: a row of either that another transaction holds locked (a long
// delete of millions of them alike) holds up the deletes, not the drop.
// Seen from pg_locks, the drop's session that waits for that row holds no
// exclusive lock, and the queue's tables are gone for every session.
func TestDropQueueForgetsItsMessagesAfterItCommits(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	for _, table := range []string{"pgbus.failures", "pgbus.idempotency_keys"} {
		q, _ := queueWithRecords(t, s)
		pid, release := lockARecordOf(t, s, table, q)
		done := make(chan error, 1)
		go func() { done <- s.DropQueue(ctx, q) }()
		pgtest.Eventually(t, time.Minute, "the drop to wait for the row of "+table+" locked", func() bool { return blocks(t, s, pid, "") })
		var exclusive int
		var tableLeft bool
		if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
				WHERE $1 = ANY(pg_blocking_pids(a.pid)) AND l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.granted),
			to_regclass($2) IS NOT NULL`, pid, pgx.Identifier{"pgmq", "q_" + q}.Sanitize()).Scan(&exclusive, &tableLeft); err != nil {
			t.Fatal(err)
		}
		if exclusive != 0 || tableLeft {
			t.Errorf("drop of %s waiting for a locked row of %s holds %d tables locked exclusively, its table still there: %v; want the drop committed first",
				q, table, exclusive, tableLeft)
		}
		release()
		if err := <-done; err != nil {
			t.Fatalf("drop of %s: %v", q, err)
		}
		if n := records(t, s, q); n != 0 {
			t.Errorf("%d failures and keys of dropped queue %s left; want none", n, q)
		}
	}
}

// A drop whose deletes after its commit are cut off says so, and leaves
// what it did not delete to a queue made again under the name and to
// retention: the queue made again hands out ids after the old one's, so
// that none of the records left names one of its messages, a send with
// the old key is a new message, and its messages have no history but
// their own.
func TestQueueMadeAgainNeverSeesRecordsADropLeft(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q, keyed := queueWithRecords(t, s)
	pid, release := lockARecordOf(t, s, "pgbus.failures", q)
	dropCtx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.DropQueue(dropCtx, q) }()
	pgtest.Eventually(t, time.Minute, "the drop to wait for the locked row", func() bool { return blocks(t, s, pid, "") })
	cancel()
	err := <-done
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "dropped, but") || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("drop cut off after its commit: %v; want it to say the queue was dropped and retention deletes what is left", err)
	}
	release()
	if n := records(t, s, q); n == 0 {
		t.Fatalf("the cut off drop left no records of %s; the test needs some", q)
	}
	ctx := testContext(t)
	if exists, err := s.QueueExists(ctx, q); err != nil || exists {
		t.Fatalf("queue %s exists after its drop: %v, %v", q, exists, err)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	again, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if again <= keyed {
		t.Errorf("a send with the old queue's key to %s made again returned id %d; the old message was %d: want a new message after it", q, again, keyed)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id >= $2`, q, again); n != 0 {
		t.Errorf("the new message %d of %s has %d failures recorded; want none", again, q, n)
	}
}

// The deletes after a drop go over every row in batches (here of 2): keys
// in their order, failures of one message split across batches, and leave
// the records of every other queue.
func TestDropQueueForgetsItsMessagesInBatches(t *testing.T) {
	store.SetForgetBatch(t, 2)
	s := testStore(t)
	ctx := testContext(t)
	q, other := newQueue(t, s), newQueue(t, s)
	for _, name := range []string{q, other} {
		exec(t, s, `INSERT INTO pgbus.idempotency_keys (queue_name, key, msg_id) SELECT '`+name+`', k, 1 FROM unnest(ARRAY['g', 'b', 'a', 'f', 'c', 'e', 'd']) k;
			INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
			SELECT '`+name+`', m, a, 'E', 'boom' FROM unnest(ARRAY[3, 1, 1, 1, 2, 2, 1]) m, generate_series(1, 1) a`)
	}
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if n := records(t, s, q); n != 0 {
		t.Errorf("%d failures and keys of dropped queue %s left; want none", n, q)
	}
	if n := records(t, s, other); n != 14 {
		t.Errorf("%d failures and keys of queue %s left; want all 14", n, other)
	}
}
