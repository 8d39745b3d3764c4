package bouncertest_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestLeaseThroughBouncer elects the alerts notifier among processes that
// reach the server through the pooler and one that does not: the lease
// holds while other clients' transactions run on the pooled connections,
// and is free for everyone once released.
func TestLeaseThroughBouncer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	direct := pgtest.OpenStore(t, dbURL)
	b := bouncertest.Start(t, dbURL)
	ctx := pgtest.Context(t)
	a, c := openStore(t, b.URL()), openStore(t, b.URL())

	lease, err := a.TryLead(ctx, store.ElectionAlerts)
	if err != nil || lease == nil {
		t.Fatalf("the first process through pgbouncer did not win a free election: %v, %v", lease, err)
	}
	// Other clients' transactions through the pooler, which a session lock
	// would travel with.
	for range 20 {
		if _, err := c.Pool().Exec(ctx, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]*store.Store{"another process through pgbouncer": c, "a process connected directly": direct} {
		if other, err := s.TryLead(ctx, store.ElectionAlerts); err != nil || other != nil {
			t.Fatalf("%s won an election already held: %v, %v", name, other, err)
		}
	}
	if err := lease.Check(ctx); err != nil {
		t.Fatalf("the held lease: %v", err)
	}
	lease.Release(ctx)
	next, err := c.TryLead(ctx, store.ElectionAlerts)
	if err != nil || next == nil {
		t.Fatalf("after the release, a process through pgbouncer: %v, %v; want it elected", next, err)
	}
	next.Release(ctx)
	if won, err := direct.TryLead(ctx, store.ElectionAlerts); err != nil || won == nil {
		t.Fatalf("after every release, the direct process: %v, %v; want it elected", won, err)
	} else {
		won.Release(ctx)
	}
}
