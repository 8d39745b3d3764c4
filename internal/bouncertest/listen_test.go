package bouncertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestListenerDeliveryCheck shows why the engine polls behind the pooler:
// a notification reaches a listener connected directly, and not one
// connected through PgBouncer in transaction mode.
func TestListenerDeliveryCheck(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	b := bouncertest.Start(t, pgtest.URL(t))
	for _, tc := range []struct {
		name string
		s    *store.Store
		want error
	}{
		{"directly", pgtest.Store(t), nil},
		{"through pgbouncer", openStore(t, b.URL()), store.ErrNoDelivery},
	} {
		l, err := tc.s.Listen(ctx)
		if err == nil { // through the pooler, Listen may find it first
			err = l.CheckDelivery(ctx, 2*time.Second)
			_ = l.Close(context.Background())
		}
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("check delivery %s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestListenThroughTransactionPoolerSubscribesNoServer: a listener through
// PgBouncer in transaction mode must leave no server connection listening.
// PgBouncer hands that server connection to other clients after the
// LISTEN's transaction, which then receive pgbus's notifications, and
// logs "got packet 'A' from server when not linked" at each send while
// it sits idle. With one server connection in the pool, every later
// client's statement meets what the listener left on it.
func TestListenThroughTransactionPoolerSubscribesNoServer(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	b := bouncertest.StartPool(t, pgtest.URL(t), 1)
	s := openStore(t, b.URL())
	l, err := s.Listen(ctx)
	if err == nil {
		err = l.CheckDelivery(ctx, 2*time.Second)
		_ = l.Close(context.Background())
	}
	if !errors.Is(err, store.ErrNoDelivery) {
		t.Fatalf("listen through pgbouncer in transaction mode: %v, want ErrNoDelivery", err)
	}
	conn, err := pgx.Connect(ctx, b.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var channels []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(c), '{}') FROM pg_listening_channels() AS c`).Scan(&channels); err != nil {
		t.Fatal(err)
	}
	if len(channels) != 0 {
		t.Fatalf("the pooler's server connection listens on %q after pgbus's listener through it gave up; want none", channels)
	}
}

// TestListenThroughSessionPooler: through PgBouncer in session mode, where
// a client keeps its server connection, notifications arrive as they do
// directly, and the listener keeps them.
func TestListenThroughSessionPooler(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	b := bouncertest.StartWith(t, pgtest.URL(t), bouncertest.Options{PoolMode: "session"})
	l, err := openStore(t, b.URL()).Listen(ctx)
	if err != nil {
		t.Fatalf("listen through pgbouncer in session mode: %v", err)
	}
	defer l.Close(context.Background())
	if err := l.CheckDelivery(ctx, 5*time.Second); err != nil {
		t.Fatalf("check delivery through pgbouncer in session mode: %v", err)
	}
}
