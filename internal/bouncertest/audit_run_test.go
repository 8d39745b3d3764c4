package bouncertest_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// An operation that runs through the pooler in transaction mode holds its
// session there as it does connected directly: readers through the pooler
// and directly see its audit entry still running while other clients'
// transactions run on the pooled connections, and no longer once it is
// released.
func TestAuditRunThroughBouncer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	direct := pgtest.OpenStore(t, dbURL)
	b := bouncertest.Start(t, dbURL)
	ctx := pgtest.Context(t)
	a, c := openStore(t, b.URL()), openStore(t, b.URL())

	run, err := a.HoldAuditRun(ctx)
	if err != nil || run == nil {
		t.Fatalf("hold a session through pgbouncer: %v, %v", run, err)
	}
	defer run.Release(ctx)
	id, err := a.StartAudit(ctx, store.AuditEntry{Client: "cli", Tool: "dlq_retry", Arguments: json.RawMessage(`{}`), RunPID: run.PID, RunKey: run.Key})
	if err != nil {
		t.Fatal(err)
	}
	// Other clients' transactions through the pooler, which a session lock
	// would travel with.
	for range 20 {
		if _, err := c.Pool().Exec(ctx, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
	}
	running := func(s *store.Store) bool {
		t.Helper()
		page, err := s.ListAudit(ctx, store.AuditFilter{}, "", 10)
		if err != nil || len(page.Items) != 1 || page.Items[0].ID != id || page.Items[0].RunPID != run.PID {
			t.Fatalf("the audit log: %+v, %v; want the pending entry %d naming session %d", page, err, id, run.PID)
		}
		live, err := s.AuditRunning(ctx, page.Items)
		if err != nil {
			t.Fatal(err)
		}
		return live[id]
	}
	for name, s := range map[string]*store.Store{"the process holding it": a, "another process through pgbouncer": c, "a process connected directly": direct} {
		if !running(s) {
			t.Errorf("%s does not see the operation running", name)
		}
	}
	run.Release(ctx)
	for name, s := range map[string]*store.Store{"another process through pgbouncer": c, "a process connected directly": direct} {
		if running(s) {
			t.Errorf("%s sees the operation running once its session was released", name)
		}
	}
}
