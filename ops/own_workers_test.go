package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// Workers a process runs that stopped on an error make the verdict of
// every service given the same OwnWorkers STALLED, their reason
// workers_stopped first, naming the queues, the error and the restart,
// and among the reasons StalledFor gives whatever queues it is asked
// about; a service of another process (its own OwnWorkers) says nothing
// of them. Only the first stop is kept.
func TestWorkersStopped(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	own := &ops.OwnWorkers{}
	workers := newService(t, s, ops.Options{OwnWorkers: own})
	agents := newService(t, s, ops.Options{OwnWorkers: own})
	other := newService(t, s, ops.Options{})
	if _, stopped := agents.StoppedWorkers(); stopped {
		t.Fatal("StoppedWorkers before any stop reports one")
	}
	r := workers.WorkersStopped([]string{"orders", "mail"}, errors.New("the handler table is gone"))
	workers.WorkersStopped([]string{"orders"}, errors.New("a later error"))
	for _, want := range []string{`queues "orders" and "mail"`, "the handler table is gone", "restart this process"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("workers_stopped reason %q lacks %q", r.Message, want)
		}
	}
	if r.Status != ops.HealthStalled || r.Code != "workers_stopped" || strings.Contains(r.Message, "a later error") {
		t.Errorf("workers_stopped reason: %+v; want STALLED, the first stop's", r)
	}
	h, err := agents.Health(ctx)
	if err != nil || h.Status != ops.HealthStalled || len(h.Reasons) == 0 || h.Reasons[0].Message != r.Message {
		t.Fatalf("health of a service sharing the stopped workers: %+v, %v; want STALLED, workers_stopped first", h, err)
	}
	if own := h.StalledFor(nil); len(own) != 1 || own[0].Message != r.Message {
		t.Errorf("StalledFor(nil) = %+v; want the workers_stopped reason", own)
	}
	o, err := agents.Overview(ctx, ops.OverviewRequest{})
	if err != nil || o.Health.Status != ops.HealthStalled || o.Health.Reasons[0].Code != "workers_stopped" {
		t.Errorf("overview of a service sharing the stopped workers: %+v, %v", o.Health, err)
	}
	if h, err := other.Health(ctx); err != nil || h.Status != ops.HealthOK {
		t.Errorf("health of another process's service: %+v, %v; want OK", h, err)
	}
}
