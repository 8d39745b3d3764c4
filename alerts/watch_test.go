package alerts_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/alerts"
	"github.com/pgbus/pgbus/ops"
)

// The verdict is reported when it changes, once; the first check reports
// it only when it is not OK, and knows the groups there are already.
func TestWatcherReportsChanges(t *testing.T) {
	w := alerts.NewWatcher(100, time.Minute)
	now := time.Now()
	old := ops.DLQSummary{Groups: []ops.DeadGroup{{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "c", Count: 7}}}
	degraded := ops.Health{Status: ops.HealthDegraded, Reasons: []ops.HealthReason{{Status: ops.HealthDegraded, Code: "queue_paused", Queue: "a", Message: "queue a is paused"}}}
	steps := []struct {
		h    ops.Health
		want []string
	}{
		{ops.Health{Status: ops.HealthOK}, nil},
		{ops.Health{Status: ops.HealthOK}, nil},
		{degraded, []string{alerts.EventHealthChanged}},
		{degraded, nil},
		{ops.Health{Status: ops.HealthStalled}, []string{alerts.EventHealthChanged}},
		{ops.Health{Status: ops.HealthOK}, []string{alerts.EventHealthChanged}},
	}
	for i, s := range steps {
		now = now.Add(time.Second)
		events := w.Observe(now, s.h, old)
		var got []string
		for _, e := range events {
			got = append(got, e.Type)
		}
		if len(got) != len(s.want) || (len(got) > 0 && got[0] != s.want[0]) {
			t.Fatalf("check %d (%s): events %v, want %v", i, s.h.Status, got, s.want)
		}
		if i == 2 && (events[0].PreviousStatus != ops.HealthOK || len(events[0].Reasons) != 1 || events[0].Reasons[0].Code != "queue_paused") {
			t.Fatalf("the change to DEGRADED: %+v", events[0])
		}
	}
	if e := alerts.NewWatcher(100, time.Minute).Observe(now, degraded, old); len(e) != 1 || e[0].Type != alerts.EventHealthChanged || e[0].PreviousStatus != "" {
		t.Fatalf("a first check on a DEGRADED system: %+v; want the verdict reported", e)
	}
}
