package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A start refused for a misspelled queue, mended by starting the workers
// again on the queue meant, stalls nothing: nothing waits in a queue that
// does not exist. Health says so in a NOTICE naming the failed start and
// how to create the queue if that name was meant, and its verdict is OK.
// A start refused for a queue not yet created still stalls the queue once
// it is created and no worker serves it: its messages wait.
func TestStartFailedOnAQueueThatDoesNotExist(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})

	typo, meant := uniqueName("nosuchq"), uniqueName("orders")
	bad := pgtest.NewClient(t, s, typo, nil)
	bad.HandleQueue(typo, func(context.Context, *engine.Job) error { return nil })
	if err := bad.Run(ctx); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Run on a misspelled queue: %v; want it refused as not found", err)
	}
	pgtest.CreateQueue(t, s, meant)
	good := pgtest.NewClient(t, s, meant, nil)
	good.HandleQueue(meant, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, good)
	pgtest.Eventually(t, time.Minute, "the worker of the queue meant running", func() bool {
		ws, err := svc.Workers(ctx, ops.WorkersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws.Workers {
			if w.ID == good.ID() && w.Status == ops.WorkerRunning {
				return true
			}
		}
		return false
	})

	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != ops.HealthOK {
		t.Errorf("health after a start refused for the misspelled queue %s, its workers then started on %s: %s, reasons %+v; want OK: nothing waits in a queue that does not exist",
			typo, meant, h.Status, h.Reasons)
	}
	var note *ops.HealthReason
	for i, r := range h.Reasons {
		if r.Code == "workers_stopped" && r.Queue == typo {
			note = &h.Reasons[i]
		}
	}
	if note == nil || note.Status != ops.HealthNotice || !strings.Contains(note.Message, "does not exist") || !strings.Contains(note.Message, bad.ID()) {
		t.Fatalf("health reasons %+v; want a NOTICE workers_stopped on %s naming the process whose start failed and that the queue does not exist", h.Reasons, typo)
	}
	created := false
	for _, n := range note.Next {
		created = created || n.Op == ops.OpQueueCreate && n.Args["queue"] == typo
	}
	if !created {
		t.Errorf("next steps of the notice: %+v; want the creation of %s, if that name was meant", note.Next, typo)
	}
	if got := h.StalledFor([]string{typo, meant}); len(got) != 0 {
		t.Errorf("StalledFor the queues: %+v; want nothing", got)
	}

	// Created after the start failed, the queue waits for a worker: the
	// failed start stalls it as any other.
	later := uniqueName("later")
	early := pgtest.NewClient(t, s, later, nil)
	early.HandleQueue(later, func(context.Context, *engine.Job) error { return nil })
	if err := early.Run(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Run on a queue not yet created: %v; want it refused as not found", err)
	}
	pgtest.CreateQueue(t, s, later)
	h, err = svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stop *ops.HealthReason
	for i, r := range h.Reasons {
		if r.Code == "workers_stopped" && r.Queue == later {
			stop = &h.Reasons[i]
		}
	}
	if h.Status != ops.HealthStalled || stop == nil || stop.Status != ops.HealthStalled || !strings.Contains(stop.Message, early.ID()) {
		t.Fatalf("health once %s, on which a start failed, was created: %s, reasons %+v; want STALLED, workers_stopped on it naming the process", later, h.Status, h.Reasons)
	}
	for _, r := range h.Reasons {
		if r.Queue == typo && r.Status != ops.HealthNotice {
			t.Errorf("reason on %s, which still does not exist: %+v; want only the notice", typo, r)
		}
	}
}
