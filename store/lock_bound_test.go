package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Under WithLockWait a statement on its own (QueryRow, Query) and one in a
// transaction wait for a lock another session holds only as long as the
// bound, failing as IsLockTimeout, and answer as ever on the tables no
// lock holds; the bound stays on no connection of the pool: a statement
// run without it after sees the database's lock_timeout.
func TestLockWaitBoundsEachStatementAndStaysOnNoConnection(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	// One connection: every statement below runs on it.
	s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "pool_max_conns", "1"))
	locked, free := pgtest.NewQueue(t, s, "lb"), pgtest.NewQueue(t, s, "lb")
	pgtest.DeadLetterN(t, s, locked, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	pgtest.DeadLetterN(t, s, free, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+locked)
	pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+locked+"_dlq")
	ctx := store.WithLockWait(testContext(t), 200*time.Millisecond)

	if _, err := s.Metrics(ctx, locked); !store.IsLockTimeout(err) {
		t.Fatalf("a statement on its own under a lock bound, on a table held locked: %v; want a lock timeout", err)
	}
	if _, err := s.ListDead(ctx, store.DeadFilter{Queue: locked}, "", 10); !store.IsLockTimeout(err) {
		t.Fatalf("a read in a transaction under a lock bound, on a table held locked: %v; want a lock timeout", err)
	}
	if m, err := s.Metrics(ctx, free); err != nil || m.Depth != 0 {
		t.Fatalf("a statement on its own under a lock bound, on a table no lock holds: %+v, %v", m, err)
	}
	page, err := s.ListDead(ctx, store.DeadFilter{Queue: free}, "", 10)
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("a read in a transaction under a lock bound, on a table no lock holds: %d items, %v; want 2", len(page.Items), err)
	}
	if qs, err := s.ListQueues(ctx); err != nil || len(qs) == 0 {
		t.Fatalf("rows under a lock bound: %d queues, %v", len(qs), err)
	}
	if got := pgtest.Int(t, s, `SELECT extract(epoch FROM current_setting('lock_timeout')::interval)::int`); got != 0 {
		t.Fatalf("lock_timeout on the pool's connection after the bounded statements: %ds; want the database's 0", got)
	}
}

// A lock_timeout the database (or role) already sets, shorter than the
// bound, is kept: the bound only shortens waits. It replaced the DBA's
// setting, so a read waited longer than the database allows.
func TestLockWaitKeepsAShorterLockTimeout(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabaseSet(t, "lock_timeout", "100ms")
	s := pgtest.OpenStore(t, url)
	locked := pgtest.NewQueue(t, s, "lb")
	pgtest.DeadLetterN(t, s, locked, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+locked)
	pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+locked+"_dlq")
	// A bound of an hour: were it to replace the database's 100ms, the
	// read would wait out the test's context and fail otherwise.
	ctx := store.WithLockWait(testContext(t), time.Hour)
	if _, err := s.ListDead(ctx, store.DeadFilter{Queue: locked}, "", 10); !store.IsLockTimeout(err) {
		t.Fatalf("a read under a bound of an hour, on a database whose lock_timeout is 100ms, of a table held locked: %v; want a lock timeout", err)
	}
}

// A read under a lock bound runs without JIT compilation, on its own and
// in a transaction: set for its transaction alone, in the statement that
// begins it, so that it works through a pooler in transaction mode and
// stays on no connection. Compiling the plan of a summary or an audit
// page, whose cost estimates are high, took seconds for statements that
// run in milliseconds. The pool's other statements keep the database's
// setting, here on.
func TestLockWaitTurnsJITOffForItsTransactionsOnly(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabaseSet(t, "jit", "on")
	// One connection: every statement below runs on it.
	s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "pool_max_conns", "1"))
	ctx := testContext(t)
	if alone, in, err := store.Setting(ctx, s, "jit"); err != nil || alone != "on" || in != "on" {
		t.Fatalf("jit without a lock bound: %q alone, %q in a transaction, %v; want the database's on", alone, in, err)
	}
	bounded := store.WithLockWait(ctx, time.Second)
	if alone, in, err := store.Setting(bounded, s, "jit"); err != nil || alone != "off" || in != "off" {
		t.Fatalf("jit under a lock bound: %q alone, %q in a transaction, %v; want off", alone, in, err)
	}
	if alone, in, err := store.Setting(ctx, s, "jit"); err != nil || alone != "on" || in != "on" {
		t.Fatalf("jit on the pool's connection after the bounded reads: %q alone, %q in a transaction, %v; want the database's on", alone, in, err)
	}
}

// Through PgBouncer in transaction mode with one server connection, which
// every client's transactions share in turn, a read under a lock bound
// runs without JIT, and the transactions after it, of the same client or
// another, meet the database's setting: nothing of the bound stays on the
// server connection.
func TestLockWaitTurnsJITOffThroughBouncer(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabaseSet(t, "jit", "on")
	pgtest.OpenStore(t, url) // migrated
	b := bouncertest.StartPool(t, url, 1)
	bounced, other := pgtest.OpenStore(t, b.URL()), pgtest.OpenStore(t, b.URL())
	ctx := testContext(t)
	bounded := store.WithLockWait(ctx, time.Second)
	for i := range 3 {
		if alone, in, err := store.Setting(bounded, bounced, "jit"); err != nil || alone != "off" || in != "off" {
			t.Fatalf("round %d: jit under a lock bound through the pooler: %q alone, %q in a transaction, %v; want off", i, alone, in, err)
		}
		for _, s := range []*store.Store{bounced, other} {
			if alone, in, err := store.Setting(ctx, s, "jit"); err != nil || alone != "on" || in != "on" {
				t.Fatalf("round %d: jit without a bound through the pooler after a bounded read: %q alone, %q in a transaction, %v; want the database's on", i, alone, in, err)
			}
		}
	}
}
