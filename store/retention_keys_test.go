package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
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
