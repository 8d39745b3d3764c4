package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// DropConnections closes the idle connections at once and a busy one when
// it is released, without cutting its statements short; the store then
// connects afresh.
func TestDropConnections(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenNamedStore(t, uniqueName("drop"))
	pool := s.Pool()
	busy, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle.Release()
	var busyPID, afterPID int
	if err := busy.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&busyPID); err != nil {
		t.Fatal(err)
	}

	s.DropConnections()
	if n := pool.Stat().TotalConns(); n != 1 {
		t.Errorf("after DropConnections the pool holds %d connections, want only the busy one", n)
	}
	var pid int
	if err := busy.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil || pid != busyPID {
		t.Errorf("the busy connection after DropConnections: pid %d, %v; want it still working, pid %d", pid, err, busyPID)
	}
	busy.Release()
	if n := pool.Stat().TotalConns(); n != 0 {
		t.Errorf("after its release the pool holds %d connections, want none", n)
	}

	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&afterPID); err != nil {
		t.Fatalf("a statement after DropConnections: %v", err)
	}
	if afterPID == busyPID {
		t.Errorf("a statement after DropConnections ran on the dropped connection %d, want a new one", afterPID)
	}
}
