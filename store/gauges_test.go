package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// QueueDepths splits a queue's depth as QueueStats does, with its DLQ's
// depth, and agrees with it.
func TestQueueDepths(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	for _, delay := range []time.Duration{0, 0, 0, time.Hour} {
		if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`), Delay: delay}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Read(ctx, q, time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	all, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got *store.QueueDepth
	for i := range all {
		if all[i].Queue == q {
			got = &all[i]
		}
	}
	if got == nil {
		t.Fatalf("QueueDepths lacks %s: %+v", q, all)
	}
	stats, err := s.QueueStats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want := store.QueueDepth{Queue: q, Visible: stats[0].Visible, InFlight: stats[0].InFlight, WaitingRetry: stats[0].WaitingRetry,
		Scheduled: stats[0].Scheduled, DLQDepth: stats[0].DLQDepth, OldestVisibleAgeSeconds: got.OldestVisibleAgeSeconds}
	if *got != want || got.Visible != 2 || got.InFlight != 1 || got.Scheduled != 1 || got.DLQDepth != 2 || got.OldestVisibleAgeSeconds <= 0 {
		t.Fatalf("depth %+v, want %+v (2 visible, 1 in flight, 1 scheduled, 2 dead)", *got, want)
	}
}

// BreakerFailed and BreakerSucceeded say how a call moved the breaker.
func TestBreakerChanges(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("breaker")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 50 * time.Millisecond, MaxCoolOff: time.Second}); err != nil {
		t.Fatal(err)
	}
	fail := func() store.BreakerChange {
		c, err := s.BreakerFailed(ctx, name, "503")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := fail(); c.Changed() || c.To != store.BreakerClosed {
		t.Fatalf("first failure: %+v, want closed and unchanged", c)
	}
	if c := fail(); c.From != store.BreakerClosed || c.To != store.BreakerOpen || !c.Opened() || c.Failures != 2 || c.OpenUntil.IsZero() {
		t.Fatalf("second failure: %+v, want closed to open", c)
	}
	pgtest.Eventually(t, 10*time.Second, "the probe", func() bool {
		v, err := s.AcquireBreaker(ctx, name, time.Minute)
		return err == nil && v.Probe
	})
	c, err := s.BreakerSucceeded(ctx, name)
	if err != nil || c != (store.BreakerChange{From: store.BreakerHalfOpen, To: store.BreakerClosed}) {
		t.Fatalf("probe success: %+v, %v; want half_open to closed", c, err)
	}
	states, err := s.BreakerStates(ctx)
	if err != nil || states[name] != store.BreakerClosed {
		t.Fatalf("states %v, %v", states[name], err)
	}
}
