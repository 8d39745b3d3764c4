package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A handler that ignores its context past its timeout and grace keeps its
// message hidden until it returns, which may be never: the health of
// every process names it (handlers_stuck, DEGRADED, on its queue), and
// the workers list shows it on its process, for as long as it runs. When
// it returns, a success is kept and both forget it.
func TestStuckHandlerNamedByHealth(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	q := uniqueName("stuck")
	pgtest.CreateQueue(t, s, q)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.HandlerGrace = 20 * time.Millisecond
		cfg.ProcessHeartbeat = 50 * time.Millisecond
	})
	release := make(chan struct{})
	c.Handle("hang", func(context.Context, *engine.Job) error { <-release; return nil }, engine.HandlerOptions{Timeout: 50 * time.Millisecond})
	id := pgtest.Send(t, c, q, json.RawMessage(`{}`), engine.SendOptions{Kind: "hang"})
	pgtest.Start(t, c)
	svc := newService(t, s, ops.Options{})

	var reason *ops.HealthReason
	pgtest.Eventually(t, time.Minute, "health to name the stuck handler", func() bool {
		h, err := svc.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reason = reasonOf(h, "handlers_stuck", q)
		return reason != nil
	})
	want := fmt.Sprintf("message %d of queue %q (kind \"hang\")", id, q)
	if reason.Status != ops.HealthDegraded || !strings.Contains(reason.Message, want) || !strings.Contains(reason.Message, "1 handler running past the timeout and grace") ||
		!strings.Contains(reason.Message, "restart the process") {
		t.Errorf("handlers_stuck = %+v; want DEGRADED, naming %s and what to do", *reason, want)
	}
	ws, err := svc.Workers(ctx, ops.WorkersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws.Workers) != 1 || ws.Workers[0].StuckCount != 1 || len(ws.Workers[0].StuckHandlers) != 1 ||
		ws.Workers[0].StuckHandlers[0].MsgID != id || ws.Workers[0].StuckHandlers[0].Queue != q || ws.Workers[0].StuckHandlers[0].Kind != "hang" {
		t.Errorf("workers = %+v; want one process with its one stuck handler, message %d", ws.Workers, id)
	}

	close(release)
	pgtest.Eventually(t, time.Minute, "health to forget the handler that returned", func() bool {
		h, err := svc.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return reasonOf(h, "handlers_stuck", q) == nil
	})
	if ws, err := svc.Workers(ctx, ops.WorkersRequest{}); err != nil || ws.Workers[0].StuckCount != 0 || ws.Workers[0].StuckHandlers != nil {
		t.Errorf("workers after the handler returned = %+v, %v; want no stuck handler", ws.Workers, err)
	}
	pgtest.Eventually(t, time.Minute, "the late success archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
}
