package ops_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The gauges count a circuit breaker while a running worker serves a
// queue that uses it, as health does: one whose processes stopped holds
// nothing up, and a gauge left open for it would keep an alert firing.
func TestGaugesCountBreakersInUse(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	name := uniqueName("bank")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.BreakerFailed(ctx, name, "503"); err != nil || c.To != store.BreakerOpen {
		t.Fatalf("open the breaker: %+v, %v", c, err)
	}
	if err := s.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: q, Kind: "charge"}}); err != nil {
		t.Fatal(err)
	}
	g, err := svc.Gauges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if state, ok := g.Breakers[name]; ok {
		t.Fatalf("no worker runs, yet the gauges count breaker %s as %s", name, state)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: uniqueName("w"), Hostname: "h", PID: 1, Queues: []string{q}, Concurrency: 1, HeartbeatInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if g, err = svc.Gauges(ctx); err != nil || g.Breakers[name] != store.BreakerOpen {
		t.Fatalf("with a worker serving %s: breakers %v, %v; want %s open", q, g.Breakers, err, name)
	}
}
