package ops_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Jobs a worker's open breaker snoozed are shown held by it (scheduled,
// with a reset to offer), and a reset runs them at once: with a cool-off
// of an hour they would otherwise wait that hour. A snooze by the handler
// itself is not the breaker's to end.
func TestCircuitResetRunsTheJobsItHeld(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 10 })
	name := uniqueName("bank")
	cfg := &store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: 2 * time.Hour}
	var healthy atomic.Bool
	var ran atomic.Int32
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("call", func(ctx context.Context, job *engine.Job) error {
		if !healthy.Load() {
			return errors.New("503 from the bank")
		}
		ran.Add(1)
		return nil
	}, engine.HandlerOptions{Breaker: cfg})
	c.Handle("later", func(ctx context.Context, job *engine.Job) error { return engine.Snooze(time.Hour) })
	pgtest.Start(t, c)
	svc := newService(t, s, ops.Options{})

	first := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "call"})
	pgtest.Eventually(t, 30*time.Second, "the first job's failure to open the breaker", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1 AND state = 'open'`, name) == 1
	})
	// The first job's retry and a new one meet the breaker open.
	if _, err := s.RunNow(ctx, q, store.RunNowOptions{}); err != nil {
		t.Fatal(err)
	}
	second := pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "call"})
	snoozed := pgtest.Send(t, c, q, 3, engine.SendOptions{Kind: "later"})
	var page ops.LiveMessages
	pgtest.Eventually(t, 30*time.Second, "both jobs held by the breaker", func() bool {
		var err error
		page, err = svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, State: store.StateScheduled})
		return err == nil && len(page.Items) == 3 && page.Items[0].HeldBy == name && page.Items[1].HeldBy == name
	})
	if page.Items[0].MsgID != first || page.Items[1].MsgID != second || page.Items[2].MsgID != snoozed || page.Items[2].HeldBy != "" {
		t.Fatalf("scheduled messages: %+v; want %d and %d held by %s, %d held by none", page.Items, first, second, name, snoozed)
	}
	resets := 0
	for _, h := range page.Next {
		if h.Op == ops.OpCircuitReset && h.Args["name"] == name {
			resets++
		}
	}
	if resets != 1 {
		t.Fatalf("next steps of a page of held jobs: %+v; want one reset of %s", page.Next, name)
	}

	healthy.Store(true)
	r, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name})
	if err != nil || r.Released != 2 || !r.Changed || r.Was != store.BreakerOpen {
		t.Fatalf("reset = %+v, %v; want the 2 held jobs made visible", r, err)
	}
	pgtest.Eventually(t, 30*time.Second, "the held jobs to run after the reset", func() bool { return ran.Load() == 2 })
	if live, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q}); err != nil || len(live.Items) != 1 || live.Items[0].MsgID != snoozed {
		t.Fatalf("live messages after the reset: %+v, %v; want only the job its handler snoozed", live.Items, err)
	}
	if r, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name}); err != nil || r.Released != 0 || r.Changed {
		t.Fatalf("second reset = %+v, %v; want nothing left to change", r, err)
	}
}
