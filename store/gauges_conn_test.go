package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// endBackendAfter ends the server process of the first connection that
// completes a statement whose command tag is tag, as a server restart or
// failover would, before the statement after it is sent.
type endBackendAfter struct {
	t     *testing.T
	admin *store.Store
	tag   string
	ended atomic.Bool
}

func (e *endBackendAfter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (e *endBackendAfter) TraceQueryEnd(_ context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	if d.Err != nil || d.CommandTag.String() != e.tag || !e.ended.CompareAndSwap(false, true) {
		return
	}
	pid := c.PgConn().PID()
	exec(e.t, e.admin, fmt.Sprintf(`SELECT pg_terminate_backend(%d)`, pid))
	pgtest.Eventually(e.t, 30*time.Second, "the backend to end", func() bool {
		return pgtest.Int(e.t, e.admin, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) == 0
	})
}

// A connection lost inside the transaction of a depth read, after its
// BEGIN, has the read made again on a checked connection, as every other
// read of the store is: the depths come back right.
func TestQueueDepthsAfterTheConnectionEndsInTheirTransaction(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	admin := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	if err := admin.CreateQueue(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SendBatch(ctx, "lost", msgs(2)); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	end := &endBackendAfter{t: t, admin: admin, tag: "SET"} // BEGIN READ ONLY; SET LOCAL jit = off
	cfg.ConnConfig.Tracer = end
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	defer s.Close()
	depths, err := s.QueueDepths(ctx)
	if !end.ended.Load() {
		t.Fatal("no depth read began a transaction")
	}
	if err != nil || len(depths) != 1 || depths[0].Visible != 2 {
		t.Fatalf("depths after the connection ended: %+v, %v; want lost with 2 visible", depths, err)
	}
}
