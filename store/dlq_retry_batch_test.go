package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A retry of many dead messages moves them a batch to a transaction, not
// one each: each commit waits for the disk, which made a retry of a mass
// incident take minutes. Every message still moves once, with its failure
// history and its idempotency key; the messages of one PGMQ FIFO group
// come back in the order they died in; and the transactions are counted
// by the ids of those that wrote the rows (xmin).
func TestRetryDeadMovesInBatches(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	const n = 400
	batch := make([]store.NewMessage, n)
	keyed := 0
	for i := range batch {
		h := map[string]string{"pgbus_kind": "k"}
		if i < 300 {
			h[store.HeaderPGMQGroup] = fmt.Sprintf("g%d", i%7)
		}
		if i%3 == 0 {
			h[store.HeaderIdempotencyKey] = fmt.Sprintf("key-%d", i)
			batch[i].IdempotencyKey = h[store.HeaderIdempotencyKey]
			keyed++
		}
		batch[i].Payload = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		batch[i].Headers, _ = json.Marshal(h)
	}
	ids, err := s.SendBatch(ctx, q, batch)
	if err != nil {
		t.Fatal(err)
	}
	deadIDs(t, s, q, dlq, ids, "Boom", store.ReasonNonRetryable)

	rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 1000, store.RetryOptions{})
	if err != nil || rep.Retried != n || rep.Failed != 0 || rep.Gone != 0 || len(rep.Unsure) != 0 {
		t.Fatalf("retry = %d retried, %d failed, %d gone, %d unsure, %v; want all %d retried", rep.Retried, rep.Failed, rep.Gone, len(rep.Unsure), err, n)
	}
	if left := pgtest.Live(t, s, dlq); left != 0 {
		t.Fatalf("the DLQ still holds %d", left)
	}
	if back := dlCount(t, s, `SELECT count(DISTINCT message->'n') FROM pgmq."q_`+q+`"`); back != n || pgtest.Live(t, s, q) != n {
		t.Fatalf("%d distinct messages back of %d in the queue; want each of %d once", back, pgtest.Live(t, s, q), n)
	}
	if moved := dlCount(t, s, `SELECT count(*) FROM pgbus.failures f JOIN pgmq."q_`+q+`" m ON f.queue_name = $1 AND f.msg_id = m.msg_id`, q); moved != n {
		t.Fatalf("%d failure rows followed their message, want %d", moved, n)
	}
	if k := dlCount(t, s, `SELECT count(*) FROM pgbus.idempotency_keys k JOIN pgmq."q_`+q+`" m ON k.queue_name = $1 AND k.msg_id = m.msg_id`, q); k != keyed {
		t.Fatalf("%d idempotency keys point at a retried message, want %d", k, keyed)
	}
	rows, err := s.Pool().Query(ctx, `SELECT headers->>'`+store.HeaderPGMQGroup+`', (message->>'n')::int FROM pgmq."q_`+q+`" WHERE headers ? '`+store.HeaderPGMQGroup+`' ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	order := map[string][]int{}
	for rows.Next() {
		var g string
		var i int
		if err := rows.Scan(&g, &i); err != nil {
			t.Fatal(err)
		}
		order[g] = append(order[g], i)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for g, got := range order {
		if !slices.IsSorted(got) {
			t.Errorf("group %s came back in the order %v; want the order its messages died in", g, got)
		}
	}
	if txs := dlCount(t, s, `SELECT count(DISTINCT xmin::text) FROM pgmq."q_`+q+`"`); txs > n/8 {
		t.Errorf("the %d messages came back in %d transactions; want a batch to a transaction, at most %d", n, txs, n/8)
	}
}

// cutStore dead-letters n messages of a new queue of a database of the
// test's own and returns a store on it through a proxy that cuts the
// connection that first sends marker, once the cut is armed, and a store
// that reads the database past the proxy.
func cutStore(t *testing.T, n int, marker string) (through, direct *store.Store, q string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	direct = pgtest.OpenStore(t, url)
	q = newQueue(t, direct)
	pgtest.DeadLetterN(t, direct, q, n, pgtest.DeadSpec{})
	proxy := pgtest.NewFreezingProxy(t, url)
	through = pgtest.OpenStore(t, proxy.URL())
	proxy.CutWhenSent(marker)
	return through, direct, q
}

// A retry whose connection breaks as a batch's commit reaches the server,
// which commits it, cannot know whether that batch moved: it stops, its
// report counts what it knows moved and lists that batch's messages as
// unsure, so that the two together cover what moved, and counts none
// failed. A commit is sent as a statement of its own, in the simple
// protocol: its message ends "COMMIT" and a NUL.
func TestRetryCutAtABatchCommitListsTheBatchUnsure(t *testing.T) {
	t.Parallel()
	const n = 200
	through, direct, q := cutStore(t, n, "COMMIT\x00")
	rep, err := through.RetryDeadMatching(testContext(t), store.DeadFilter{Queue: q}, n, store.RetryOptions{})
	if err == nil || !store.IsUnreachable(err) || rep.Failed != 0 || len(rep.Unsure) == 0 {
		t.Fatalf("retry cut at a batch's commit = %d retried, %d failed, unsure %v, %v; want the database unreachable and the batch unsure", rep.Retried, rep.Failed, rep.Unsure, err)
	}
	// The server commits the batch it got whole.
	pgtest.Eventually(t, time.Minute, "the cut batch to commit", func() bool {
		return pgtest.Live(t, direct, q)+pgtest.Live(t, direct, store.DLQName(q)) == n && pgtest.Int(t, direct, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle' AND query = 'COMMIT'`) == 0
	})
	live := pgtest.Live(t, direct, q)
	if live < rep.Retried || live > rep.Retried+len(rep.Unsure) {
		t.Fatalf("%d messages moved; the report counts %d retried and %d unsure, which must cover them", live, rep.Retried, len(rep.Unsure))
	}
	for _, u := range rep.Unsure {
		if u.DLQ != store.DLQName(q) {
			t.Fatalf("unsure %+v is not of %s", u, store.DLQName(q))
		}
	}
}

// A retry whose connection breaks while a batch's moves run, before its
// commit was sent, knows that batch did not move: it stops with the
// database unreachable, and its report counts what moved, with nothing
// unsure and nothing failed.
func TestRetryCutBeforeABatchCommitKnowsItDidNotMove(t *testing.T) {
	t.Parallel()
	const n = 200
	through, direct, q := cutStore(t, n, "BEGIN ISOLATION LEVEL READ COMMITTED")
	rep, err := through.RetryDeadMatching(testContext(t), store.DeadFilter{Queue: q}, n, store.RetryOptions{})
	if err == nil || !store.IsUnreachable(err) || rep.Failed != 0 || len(rep.Unsure) != 0 || rep.Retried >= n {
		t.Fatalf("retry cut in a batch = %d retried, %d failed, unsure %v, %v; want the database unreachable, none unsure or failed", rep.Retried, rep.Failed, rep.Unsure, err)
	}
	if live, dead := pgtest.Live(t, direct, q), pgtest.Live(t, direct, store.DLQName(q)); live != rep.Retried || live+dead != n {
		t.Fatalf("%d back in the queue, %d in the DLQ; want the %d the report counts back, the rest dead", live, dead, rep.Retried)
	}
}

// A retry by filter cancelled once its moves go a batch to a transaction
// stops between batches: the batches under way commit, and the report
// counts exactly what moved, none unsure and none failed.
func TestRetryCancelledBetweenBatchesCountsWhatMoved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	const n = 500
	pgtest.DeadLetterN(t, s, q, n, pgtest.DeadSpec{})
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	var moved atomic.Int64
	trace := func(context.Context, string, int64, store.TraceContext) (store.TraceContext, func(string, int64, error)) {
		return store.TraceContext{}, func(_ string, _ int64, err error) {
			if err == nil && moved.Add(1) == 40 {
				cancel() // amid the lanes' batches of 4 to 16
			}
		}
	}
	rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, n, store.RetryOptions{Trace: trace})
	live, dead := pgtest.Live(t, s, q), pgtest.Live(t, s, store.DLQName(q))
	if !errors.Is(err, context.Canceled) || rep.Retried != live || len(rep.Moved)+rep.MovedOmitted != live || rep.Failed != 0 || len(rep.Unsure) != 0 {
		t.Fatalf("cancelled retry = %d retried (%d listed, %d omitted), %d failed, %d unsure, %v; %d moved; want context.Canceled and exactly what moved counted",
			rep.Retried, len(rep.Moved), rep.MovedOmitted, rep.Failed, len(rep.Unsure), err, live)
	}
	if live < 40 || live == n || live+dead != n || int(moved.Load()) != live {
		t.Fatalf("%d moved, %d dead, %d spans ended moved; want the retry stopped partway past 40, each message in one place", live, dead, moved.Load())
	}
}
