package ops_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// While another session holds a queue's table locked, the health check
// cannot read the queues: its verdict is DEGRADED, health_check_slow, and
// its counts of queues, backlog, dead messages and running workers are
// unknown, so they are absent from it rather than 0, which would read as
// no queue, no backlog and no worker. Once the lock goes they are there
// again, a count of 0 included.
func TestHealthUnderALockLeavesCountsUnknown(t *testing.T) {
	t.Parallel()
	url, s, q, _ := lockableDeadQueue(t, 2)
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: longCallTimeout})
	ctx := testContext(t)
	counts := []string{"queues", "backlog", "dead_messages", "workers_running"}

	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q)
	for name, check := range map[string]func(context.Context) (ops.Health, error){"HealthOrSlow": svc.HealthOrSlow, "HealthOrUnreachable": svc.HealthOrUnreachable} {
		h, err := check(ctx)
		if err != nil || h.Status != ops.HealthDegraded || len(h.Reasons) != 1 || h.Reasons[0].Code != "health_check_slow" {
			t.Fatalf("%s while pid %d holds the queue's table: %+v, %v; want DEGRADED, health_check_slow", name, lock.PID, h, err)
		}
		fields := healthFields(t, h)
		for _, k := range counts {
			if v, ok := fields[k]; ok && v != nil {
				t.Errorf("%s while the queue's table is held: %s is %v; want it absent, as the check could not count it", name, k, v)
			}
		}
	}

	lock.Release()
	h, err := svc.HealthOrSlow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fields := healthFields(t, h)
	want := map[string]float64{"queues": 1, "backlog": 0, "dead_messages": 2, "workers_running": 0}
	for _, k := range counts {
		if v, ok := fields[k].(float64); !ok || v != want[k] {
			t.Errorf("health once the lock went: %s is %v; want %v", k, fields[k], want[k])
		}
	}
}

// healthFields is h as JSON, decoded.
func healthFields(t *testing.T, h ops.Health) map[string]any {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	return fields
}
