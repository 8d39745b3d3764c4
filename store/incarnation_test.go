package store_test

import (
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue dropped and made again outside pgbus (pgmq.drop_queue, then
// pgmq.create) starts its ids over: what pgbus kept of the queue before it
// (failure history and idempotency keys by message id, counters by queue)
// is not the new queue's. A message of the new queue dead-lettered before
// pgbus settled the queue leaves the old failures of its id behind, and
// retention forgets them with the old keys and counters; a message retried
// into the new queue since keeps the failures it brought, and so do the
// new queue's own. They used to show on the new messages of the same ids,
// and to follow them into the DLQ.
func TestAQueueMadeAgainOutsidePgbusForgetsTheQueueBeforeIt(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t) // a database of its own: retention reads every queue
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	const q, dlq = "remade", "remade_dlq"
	pgtest.CreateQueue(t, s, q)
	classes := func(queue string, id int64) []string {
		t.Helper()
		return textRows(t, s, `SELECT error_class FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2 ORDER BY id`, queue, id)
	}
	fail := func(queue string, id int64, class string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
			VALUES ($1, $2, 1, $3, 'boom')`, queue, id, class); err != nil {
			t.Fatal(err)
		}
	}

	// The queue before: message 1 failed twice, message 2 died after a
	// failure, message 3 holds a key; counters of ten minutes ago.
	ids, err := s.SendBatch(ctx, q, msgs(2))
	if err != nil || !slices.Equal(ids, []int64{1, 2}) {
		t.Fatalf("sent %v, %v; want ids 1 and 2", ids, err)
	}
	fail(q, 1, "OldFirst")
	fail(q, 1, "OldFirst")
	fail(q, 2, "OldSecond")
	oldDead := deadIDs(t, s, q, dlq, []int64{2}, "OldDeath", store.ReasonNonRetryable)[0]
	if id, err := s.Send(ctx, q, keyed(`{}`, "order-42")); err != nil || id != 3 {
		t.Fatalf("keyed send = %d, %v; want id 3", id, err)
	}
	exec(t, s, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, dead_lettered)
		VALUES (date_trunc('minute', now()) - interval '10 minutes', 'remade', '', 1)`)

	exec(t, s, `SELECT pgmq.drop_queue('remade'); SELECT pgmq.create('remade');
		SELECT pgmq.send('remade', '{"new":1}'); SELECT pgmq.send('remade', '{"new":2}')`)

	// New message 1 dies before anything settled the queue: the old
	// message 1's failures stay behind, its own goes with it.
	newDead := deadIDs(t, s, q, dlq, []int64{1}, "NewDeath", store.ReasonNonRetryable)[0]
	if got := classes(dlq, newDead); !slices.Equal(got, []string{"NewDeath"}) {
		t.Fatalf("the new dead message's failures are %v; want its own NewDeath alone", got)
	}
	fail(q, 2, "NewSecond") // the new message 2's own, recorded after the queue was made
	exec(t, s, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded)
		VALUES (date_trunc('minute', now()), 'remade', '', 1)`)

	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran || !slices.Contains(rep.QueuesMadeAgain, q) || slices.Contains(rep.QueuesMadeAgain, dlq) {
		t.Fatalf("retention = %+v, %v; want %s found made again, and its DLQ not", rep, err, q)
	}
	if got := textRows(t, s, `SELECT msg_id || ' ' || error_class FROM pgbus.failures WHERE queue_name = $1 ORDER BY id`, q); !slices.Equal(got, []string{"2 NewSecond"}) {
		t.Errorf("failures of %s after retention: %v; want the new message 2's alone", q, got)
	}
	if got := classes(dlq, oldDead); !slices.Equal(got, []string{"OldSecond", "OldDeath"}) {
		t.Errorf("the old dead message's failures are %v; want its OldSecond and OldDeath, its DLQ was not made again", got)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.idempotency_keys WHERE queue_name = $1`, q); n != 0 {
		t.Errorf("%d idempotency keys of the queue before are left, want none", n)
	}
	if got := textRows(t, s, `SELECT succeeded || ' ' || dead_lettered FROM pgbus.stats_minute WHERE queue_name = $1`, q); !slices.Equal(got, []string{"1 0"}) {
		t.Errorf("counters of %s after retention: %v; want the new queue's alone", q, got)
	}

	// The old dead message retried into the new queue brings its
	// failures, which stay: the queue is settled.
	retried, err := s.RetryDead(ctx, dlq, []int64{oldDead}, store.RetryOptions{})
	if err != nil || len(retried.Moved) != 1 {
		t.Fatalf("retry = %+v, %v", retried, err)
	}
	back := retried.Moved[0].MsgID
	if rep, err := s.RunRetention(ctx, 100, 0); err != nil || len(rep.QueuesMadeAgain) != 0 {
		t.Fatalf("a second retention = %+v, %v; want no queue made again", rep, err)
	}
	if got := classes(q, back); !slices.Equal(got, []string{"OldSecond", "OldDeath"}) {
		t.Errorf("the retried message's failures are %v; want those it brought", got)
	}
}
