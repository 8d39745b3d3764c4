package alerts

import (
	"log/slog"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A process that reported the database unreachable, and finds another
// process elected once it answers again, reports the return itself: the
// other goes on from the last check recorded, from before the outage, and
// would not.
func TestOutageReporterReportsTheReturnWhenAnotherLeads(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(st, svc, Config{URL: "http://127.0.0.1:9/hook", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.TryLead(ctx, store.ElectionAlerts)
	if err != nil || other == nil {
		t.Fatalf("the other process's election: %v, %v", other, err)
	}
	defer other.Release(ctx)
	n.watcher = NewWatcher(n.cfg.GrowthThreshold, n.cfg.GrowthWindow)
	n.watcher.observeVerdict(ops.Health{Status: ops.HealthOK})
	n.outage = &ops.Health{Status: ops.HealthUnreachable, Reasons: []ops.HealthReason{{Status: ops.HealthUnreachable, Code: "database_unreachable", Message: "down"}}}
	n.watcher.observeVerdict(*n.outage)

	if lease := n.check(ctx, nil); lease != nil {
		t.Fatal("elected while another process leads")
	}
	it, ok := n.sender.next()
	if !ok || it.alert == nil || len(it.alert.Events) != 1 || it.check != nil {
		t.Fatalf("queued after the check: %+v, %v; want one alert, no check recorded", it, ok)
	}
	if e := it.alert.Events[0]; e.Type != EventHealthChanged || e.PreviousStatus != ops.HealthUnreachable || e.Status == ops.HealthUnreachable {
		t.Fatalf("event %+v; want the verdict's change from UNREACHABLE", e)
	}
	// Reported once: the next check, still not elected, says nothing.
	n.check(ctx, nil)
	if it, ok := n.sender.next(); ok {
		t.Fatalf("queued after a second check: %+v", it)
	}
}
