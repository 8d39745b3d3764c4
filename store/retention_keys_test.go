package store_test

import (
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A retention pass prunes the idempotency keys of only the queues that
// have a key past their retention: it made a transaction of its own for
// every PGMQ table, so a fleet of a thousand queues, their DLQs and levels
// ran thousands of them every pass with nothing to delete. The key past
// its retention still goes.
func TestRetentionPrunesKeysOnlyWhereSomeAreOld(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	admin := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	var queues []string
	for range 4 {
		queues = append(queues, newQueue(t, admin))
	}
	old, recent := queues[0], queues[1]
	exec(t, admin, `INSERT INTO pgbus.idempotency_keys (queue_name, key, msg_id, created_at) VALUES
		('`+old+`', 'a', 1, now() - interval '30 days'), ('`+recent+`', 'b', 1, now())`)

	s, prunes := pgtest.CountingStore(t, url, "DELETE FROM pgbus.idempotency_keys k")
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	if n := prunes.Load(); n != 1 {
		t.Errorf("%d statements pruned a queue's keys, want 1: those of %s alone, of the %d queues and their DLQs", n, old, len(queues))
	}
	if rep.KeysDeleted != 1 || pgtest.Int(t, admin, `SELECT count(*) FROM pgbus.idempotency_keys WHERE queue_name = $1`, recent) != 1 {
		t.Errorf("%d keys deleted, want the old one, and the recent one kept", rep.KeysDeleted)
	}
}

// A retention pass prunes idempotency keys a batch to a statement, each
// statement a transaction of its own, as it prunes archives and counters:
// a queue's keys and those of dropped queues went in one DELETE each, which
// on a backlog of millions (the first pass after workers were down for a
// week) held one long transaction, and once it ran past the database call
// timeout failed on every pass, so that the keys were never pruned again
// and grew without bound. Keys still in force stay, those of a batch of
// sends that share one enqueue time among them, more of them than a batch.
func TestRetentionPrunesIdempotencyKeysInBatches(t *testing.T) {
	url := pgtest.NewDatabase(t) // a database of its own: retention prunes every key
	admin := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	store.SetKeysPruneBatch(t, 3)
	q := newQueue(t, admin)
	var live []int64
	for i := range 4 {
		id, err := admin.Send(ctx, q, keyed(`{}`, fmt.Sprintf("live-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, id)
	}
	// 30 days ago, the 4 keys in force with their messages, and 7 keys of
	// messages gone at the very same time; 3 more gone a day before them;
	// and 5 keys of a queue dropped outside pgbus, 40 days ago.
	exec(t, admin, `UPDATE pgmq.q_`+q+` SET enqueued_at = date_trunc('second', now()) - interval '30 days';
		UPDATE pgbus.idempotency_keys SET created_at = date_trunc('second', now()) - interval '30 days' WHERE queue_name = '`+q+`';
		INSERT INTO pgbus.idempotency_keys (queue_name, key, msg_id, created_at)
		SELECT '`+q+`', 'gone-' || g, 1000 + g, date_trunc('second', now()) - interval '30 days' FROM generate_series(1, 7) g
		UNION ALL SELECT '`+q+`', 'older-' || g, 2000 + g, date_trunc('second', now()) - interval '31 days' FROM generate_series(1, 3) g
		UNION ALL SELECT 'dropped_elsewhere', 'd-' || g, g, now() - interval '40 days' FROM generate_series(1, 5) g`)

	s, prunes := pgtest.CountingStore(t, url, "DELETE FROM pgbus.idempotency_keys")
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran || len(rep.StepsFailed) != 0 {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	if rep.KeysDeleted != 15 {
		t.Errorf("%d keys deleted, want 15: the 10 of the queue's messages gone and the 5 of the dropped queue", rep.KeysDeleted)
	}
	if n := pgtest.Int(t, admin, `SELECT count(*) FROM pgbus.idempotency_keys WHERE queue_name = $1 AND key LIKE 'live-%'`, q); n != 4 {
		t.Errorf("%d keys of live messages left, want the 4 in force", n)
	}
	if n := pgtest.Int(t, admin, `SELECT count(*) FROM pgbus.idempotency_keys WHERE key NOT LIKE 'live-%'`); n != 0 {
		t.Errorf("%d keys past retention left, want none", n)
	}
	// The queue's 14 old keys in batches of 3 (3, 3, 3, 3, 2) and the
	// dropped queue's 5 (3, 2).
	if n := prunes.Load(); n != 7 {
		t.Errorf("%d statements pruned keys, want 7: batches of 3 keys at most", n)
	}
}
