package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// One process at a time wins an election: a second one loses while the
// first holds the lease, and wins once it is released.
func TestTryLeadOneAtATime(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := pgtest.OpenStore(t, url), pgtest.OpenStore(t, url)
	ctx := testContext(t)
	la, err := a.TryLead(ctx, store.ElectionAlerts)
	if err != nil || la == nil {
		t.Fatalf("the first process: lease %v, %v; want it elected", la, err)
	}
	if lb, err := b.TryLead(ctx, store.ElectionAlerts); err != nil || lb != nil {
		t.Fatalf("the second process: lease %v, %v; want it to lose while the first leads", lb, err)
	}
	if err := la.Check(ctx); err != nil {
		t.Fatalf("the held lease: %v", err)
	}
	la.Release(ctx)
	la.Release(ctx)
	if err := la.Check(ctx); err == nil {
		t.Fatal("a released lease passes its check")
	}
	lb, err := b.TryLead(ctx, store.ElectionAlerts)
	if err != nil || lb == nil {
		t.Fatalf("after the release: lease %v, %v; want the second process elected", lb, err)
	}
	lb.Release(ctx)
}

// The elections (the alerts' lease, the retention turn) hold no snapshot
// while their transactions sit idle, whatever isolation the role or
// database sets by default: the portal of their lock's statement kept its
// snapshot, as REPEATABLE READ kept the first statement's, for as long as
// the process led, hours, holding back vacuum of every table, queue
// tables included.
func TestElectionsHoldNoSnapshot(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabaseSet(t, "default_transaction_isolation", "repeatable read")
	s, watcher := pgtest.OpenStore(t, url), pgtest.OpenStore(t, url)
	ctx := testContext(t)
	lease, err := s.TryLead(ctx, store.ElectionAlerts)
	if err != nil || lease == nil {
		t.Fatalf("lease %v, %v; want it elected", lease, err)
	}
	defer lease.Release(ctx)
	if err := lease.Check(ctx); err != nil {
		t.Fatal(err)
	}
	turn, err := s.TryRetentionTurn(ctx)
	if err != nil || turn == nil {
		t.Fatalf("retention turn %v, %v; want it taken", turn, err)
	}
	defer turn.End(ctx)
	var held []string
	rows, err := watcher.Pool().Query(ctx, `SELECT query FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'idle in transaction' AND backend_xmin IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		held = append(held, q)
	}
	if len(held) != 0 {
		t.Errorf("idle transactions of this database hold a snapshot while the elections are held, after %q; want none", held)
	}
}

// A renewing lease (the alerting process's) ends its transaction and
// takes its lock again every second, so that a pooler's PAUSE can finish;
// a process that tries to lead all the while never does, even when it
// wins the lock between the leader's two transactions: it yields it to
// the leader's renewal.
func TestRenewingLeaseKeepsItsElection(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b, watcher := pgtest.OpenStore(t, url), pgtest.OpenStore(t, url), pgtest.OpenStore(t, url)
	ctx := testContext(t)
	la, err := a.TryLeadRenewing(ctx, store.ElectionAlerts)
	if err != nil || la == nil {
		t.Fatalf("the first process: lease %v, %v; want it elected", la, err)
	}
	defer la.Release(ctx)
	// Until the leader began its transaction four times: three renewals.
	starts := map[time.Time]bool{}
	for len(starts) < 4 {
		if lb, err := b.TryLeadRenewing(ctx, store.ElectionAlerts); err != nil || lb != nil {
			if lb != nil {
				lb.Release(ctx)
			}
			t.Fatalf("another process, after %d renewals of the leader: lease %v, %v; want it to lose while the first leads", len(starts)-1, lb, err)
		}
		var start time.Time
		err := watcher.Pool().QueryRow(ctx, `SELECT a.xact_start FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND ((l.classid::bigint << 32) | l.objid::bigint) = $1`, int64(store.ElectionAlerts)).Scan(&start)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) { // none, between two transactions
			t.Fatal(err)
		}
		if err == nil {
			starts[start] = true
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
	if err := la.Check(ctx); err != nil {
		t.Fatalf("the renewed lease: %v", err)
	}
	la.Release(ctx)
	lb, err := b.TryLeadRenewing(ctx, store.ElectionAlerts)
	if err != nil || lb == nil {
		t.Fatalf("after the release: lease %v, %v; want the second process elected", lb, err)
	}
	lb.Release(ctx)
}
