package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A person watching the workers at the info level sees the breaker open
// once when its downstream fails, and close once the downstream is back.
func TestBreakerTransitionsLoggedAtInfo(t *testing.T) {
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 50; qs.RetryBackoff = 20 * time.Millisecond })
	name := uniqueName("logged")
	cfg := &store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 100 * time.Millisecond, MaxCoolOff: 200 * time.Millisecond}
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var healthy atomic.Bool
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = log })
	c.Handle("call", func(context.Context, *engine.Job) error {
		if healthy.Load() {
			return nil
		}
		return errors.New("503 from the bank")
	}, engine.HandlerOptions{Breaker: cfg})
	pgtest.Start(t, c)
	for i := range 4 {
		pgtest.Send(t, c, q, i, engine.SendOptions{Kind: "call"})
	}
	pgtest.Eventually(t, 30*time.Second, "the opening logged", func() bool {
		return strings.Contains(logs.String(), "circuit breaker opened")
	})
	healthy.Store(true)
	pgtest.Eventually(t, 30*time.Second, "every message archived", func() bool { return pgtest.Archived(t, s, q) == 4 })
	out := logs.String()
	if n := strings.Count(out, "circuit breaker opened"); n != 1 {
		t.Errorf("the opening logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "circuit breaker closed"); n != 1 {
		t.Errorf("the closing logged %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{"breaker=" + name, "queue=" + q, "kind=call", "level=INFO"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}
