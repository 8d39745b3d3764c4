package pgtest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/store"
)

// statementCounter counts the statements whose SQL holds match.
type statementCounter struct {
	match string
	n     *atomic.Int64
}

func (c statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, c.match) {
		c.n.Add(1)
	}
	return ctx
}

func (statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// CountingStore opens a store on the database at dbURL, on a pool of its
// own closed when the test ends, that counts in the returned counter the
// statements it runs whose SQL holds match: a test of how many times
// something is asked.
func CountingStore(tb testing.TB, dbURL, match string) (*store.Store, *atomic.Int64) {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	store.ConfigurePool(cfg)
	n := &atomic.Int64{}
	cfg.ConnConfig.Tracer = statementCounter{match: match, n: n}
	pool, err := pgxpool.NewWithConfig(Context(tb), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s := store.New(pool)
	tb.Cleanup(s.Close)
	return s, n
}
