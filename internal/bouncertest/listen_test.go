package bouncertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
		if err != nil {
			t.Fatalf("listen %s: %v", tc.name, err)
		}
		err = l.CheckDelivery(ctx, 2*time.Second)
		_ = l.Close(context.Background())
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("check delivery %s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
