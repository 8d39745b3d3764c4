package ops_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// payloadChecks counts the statements that check a corrected payload as
// the database reads it (store.CheckCorrectedPayload).
type payloadChecks struct{ n atomic.Int64 }

func (c *payloadChecks) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "::text::jsonb IS NULL") {
		c.n.Add(1)
	}
	return ctx
}

func (c *payloadChecks) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A retry with a corrected payload, a dry run or not, checks the payload
// as the database reads it once.
func TestCorrectedPayloadCheckedOnce(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	store.ConfigurePool(cfg)
	checks := &payloadChecks{}
	cfg.ConnConfig.Tracer = checks
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	svc := newService(t, store.New(pool), ops.Options{})
	q := newQueue(t, s, nil)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: `{"n":1}`})[0]
	for _, dry := range []bool{true, false} {
		checks.n.Store(0)
		out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"n":2}`), DryRun: dry})
		if err != nil || out.Retried != 1 {
			t.Fatalf("retry (dry run %v) = %+v, %v; want it retried", dry, out, err)
		}
		if n := checks.n.Load(); n != 1 {
			t.Errorf("retry (dry run %v) checked the corrected payload %d times; want once", dry, n)
		}
	}
}
