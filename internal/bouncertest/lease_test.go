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

// TestLeaseLetsBouncerPause: PgBouncer's PAUSE waits until every server
// connection of the database is released, holding every client's new
// transaction meanwhile. A lease held in one transaction for as long as
// the process leads (the alerting process leads for as long as it runs)
// was never released, so PAUSE, taken for a failover or a restart of
// PostgreSQL, never finished, and every application behind the pooler
// waited with it. The lease ends its transaction and begins another
// every second, and leads again once the pooler resumes.
func TestLeaseLetsBouncerPause(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	b := bouncertest.Start(t, dbURL)
	ctx := pgtest.Context(t)
	a := openStore(t, b.URL())

	lease, err := a.TryLeadRenewing(ctx, store.ElectionAlerts)
	if err != nil || lease == nil {
		t.Fatalf("the first process through pgbouncer did not win a free election: %v, %v", lease, err)
	}
	defer lease.Release(ctx)
	// Fails the test when PAUSE does not finish within its minute.
	b.Pause(t)
	b.Resume(t)
	if err := lease.Check(ctx); err != nil {
		t.Fatalf("the lease, after the pooler paused and resumed: %v; want it still held", err)
	}
	var holders int
	if err := pgtest.OpenStore(t, dbURL).Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND ((classid::bigint << 32) | objid::bigint) = $1`, int64(store.ElectionAlerts)).Scan(&holders); err != nil {
		t.Fatal(err)
	}
	if holders != 1 {
		t.Errorf("%d sessions hold the election's lock after the pooler resumed; want the lease's one", holders)
	}
}
