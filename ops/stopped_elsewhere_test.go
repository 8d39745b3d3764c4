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

// Workers that stopped on an error as they started (here: their queue was
// not created yet, and is created since) are seen by the health of every
// process, not only by the one that ran them, which alone knew: STALLED,
// workers_stopped on their queue, with the error, among the reasons
// StalledFor gives a process that works that queue and no other's. Once a
// running worker serves the queue, the reason goes.
func TestWorkersStoppedElsewhere(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	q := uniqueName("gone")
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	if err := c.Run(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Run on a queue that does not exist: %v; want it refused as not found", err)
	}
	pgtest.CreateQueue(t, s, q)
	svc := newService(t, s, ops.Options{})
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found *ops.HealthReason
	for i, r := range h.Reasons {
		if r.Code == "workers_stopped" {
			found = &h.Reasons[i]
		}
	}
	if found == nil || found.Status != ops.HealthStalled || found.Queue != q || h.Status != ops.HealthStalled ||
		!strings.Contains(found.Message, "does not exist") || !strings.Contains(found.Message, c.ID()) {
		t.Fatalf("health of another process after workers of %s stopped on an error: %+v\nwant STALLED, workers_stopped on the queue naming the process and its error", q, h)
	}
	if got := h.StalledFor(nil); len(got) != 0 {
		t.Errorf("StalledFor a process that works no queue: %+v; want nothing of another process's workers", got)
	}
	if got := h.StalledFor([]string{q}); len(got) != 1 || got[0].Code != "workers_stopped" {
		t.Errorf("StalledFor a process working %s: %+v; want the stop", q, got)
	}

	again := pgtest.NewClient(t, s, q, nil)
	again.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, again)
	pgtest.Eventually(t, time.Minute, "the reason gone once a worker serves the queue", func() bool {
		h, err := svc.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range h.Reasons {
			if r.Code == "workers_stopped" {
				return false
			}
		}
		return true
	})
}
