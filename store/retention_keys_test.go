package store_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// keyPrunes counts the statements that prune one queue's idempotency keys.
type keyPrunes struct{ n atomic.Int64 }

func (k *keyPrunes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "DELETE FROM pgbus.idempotency_keys k") {
		k.n.Add(1)
	}
	return ctx
}

func (k *keyPrunes) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

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

	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	prunes := &keyPrunes{}
	cfg.ConnConfig.Tracer = prunes
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	defer s.Close()
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	if n := prunes.n.Load(); n != 1 {
		t.Errorf("%d statements pruned a queue's keys, want 1: those of %s alone, of the %d queues and their DLQs", n, old, len(queues))
	}
	if rep.KeysDeleted != 1 || pgtest.Int(t, admin, `SELECT count(*) FROM pgbus.idempotency_keys WHERE queue_name = $1`, recent) != 1 {
		t.Errorf("%d keys deleted, want the old one, and the recent one kept", rep.KeysDeleted)
	}
}
