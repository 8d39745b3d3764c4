package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// probeBreaker is a breaker that one failure opens and that lets a probe
// through a moment later.
func probeBreaker() *store.BreakerConfig {
	return &store.BreakerConfig{Name: uniqueName("dep"), FailureThreshold: 1, CoolOff: 100 * time.Millisecond, MaxCoolOff: time.Second}
}

// probeHandler fails the payload "fail" as a downstream would, ends the
// payload "probe" with probe after saying on started that it runs, and
// counts every other call as a success of the downstream in good.
func probeHandler(probe func(context.Context) error, started chan<- struct{}, good *atomic.Int32) engine.HandlerFunc {
	return func(ctx context.Context, job *engine.Job) error {
		var in string
		if err := job.Decode(&in); err != nil {
			return err
		}
		switch in {
		case "fail":
			return errTransient
		case "probe":
			select {
			case started <- struct{}{}:
			default:
			}
			return probe(ctx)
		}
		good.Add(1)
		return nil
	}
}

// breakerState is the state of breaker name, "" before a client made it.
func breakerState(t *testing.T, s *store.Store, name string) string {
	t.Helper()
	var st string
	if err := s.Pool().QueryRow(testContext(t), `SELECT coalesce((SELECT state FROM pgbus.circuit_breakers WHERE name = $1), '')`, name).Scan(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// openBreaker sends a job that fails through c, waits for it to open the
// breaker, and then for its cool-off to end by the database's clock: the
// next job of the kind is the probe.
func openBreaker(t *testing.T, s *store.Store, c *engine.Client, q, name string) {
	t.Helper()
	pgtest.Send(t, c, q, "fail", engine.SendOptions{Kind: "call"})
	pgtest.Eventually(t, 30*time.Second, "the breaker to open", func() bool { return breakerState(t, s, name) == store.BreakerOpen })
	pgtest.Eventually(t, 30*time.Second, "the cool-off to end", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1 AND open_until <= clock_timestamp()`, name) == 1
	})
}

// A half-open breaker's probe whose job ends in a way that says nothing of
// the downstream is given back: the next job of the kind probes at once,
// and closes the breaker. The probe used to be kept until it was taken for
// lost (after the queue's visibility timeout, 10 minutes here), every job
// of the kind snoozed meanwhile.
func TestProbeEndingWithoutVerdictFreesTheBreaker(t *testing.T) {
	t.Parallel()
	endings := map[string]func(context.Context) error{
		"non-retryable": func(context.Context) error { return engine.NonRetryable(errors.New("bad input")) },
		"discard":       func(context.Context) error { return engine.Discard(errors.New("not wanted")) },
		"snooze":        func(context.Context) error { return engine.Snooze(time.Hour) },
		"panic":         func(context.Context) error { panic("a bug in the handler") },
		"stop":          nil, // cut off by a stop past the drain timeout
	}
	for ending, probe := range endings {
		t.Run(ending, func(t *testing.T) {
			s := testStore(t)
			q := newQueue(t, s, func(qs *store.QueueSettings) {
				qs.MaxRetries = 1
				qs.VisibilityTimeout = 10 * time.Minute
			})
			cfg := probeBreaker()
			var good atomic.Int32
			started := make(chan struct{}, 1)
			if probe == nil {
				probe = func(ctx context.Context) error {
					<-ctx.Done()
					return ctx.Err()
				}
			}
			c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.DrainTimeout = 100 * time.Millisecond })
			c.Handle("call", probeHandler(probe, started, &good), engine.HandlerOptions{Breaker: cfg})
			stop := pgtest.Start(t, c)
			openBreaker(t, s, c, q, cfg.Name)
			pgtest.Send(t, c, q, "probe", engine.SendOptions{Kind: "call"})
			<-started // the breaker is half-open, its probe taken
			if ending == "stop" {
				stop()
				// Another process, which finds the breaker as the stop left
				// it, and the cut-off probe's message visible again: it
				// runs again there, and the downstream answers now.
				c = pgtest.NewClient(t, s, q, nil)
				c.Handle("call", probeHandler(func(context.Context) error { return nil }, started, &good), engine.HandlerOptions{Breaker: cfg})
				pgtest.Start(t, c)
			}
			pgtest.Send(t, c, q, "good", engine.SendOptions{Kind: "call"})
			// Far less than the 10 minutes a kept probe holds the breaker.
			pgtest.Eventually(t, 30*time.Second, "the next job to run", func() bool { return good.Load() == 1 })
			pgtest.Eventually(t, 30*time.Second, "the breaker to close", func() bool { return breakerState(t, s, cfg.Name) == store.BreakerClosed })
		})
	}
}

// A probe running longer than the queue's visibility timeout (the
// heartbeat keeps its message, up to the handler's timeout) stays the
// breaker's one probe: it is taken for lost only past the handler's timeout
// and grace, where it used to be after the visibility timeout, and more
// probes ran beside it against a downstream still thought down.
func TestLongProbeIsTheOnlyProbe(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) {
		qs.MaxRetries = 1
		// Two seconds, not one: a heartbeat (every third of it) late by
		// more than the rest on a starved machine lets the message be read
		// again, which is not what this test is about.
		qs.VisibilityTimeout = 2 * time.Second
	})
	cfg := probeBreaker()
	var halfOpen overlap // the calls that started while the breaker was half-open
	var good atomic.Int32
	slow := func(ctx context.Context) error {
		var state string
		if err := s.Pool().QueryRow(ctx, `SELECT state FROM pgbus.circuit_breakers WHERE name = $1`, cfg.Name).Scan(&state); err != nil {
			return err
		}
		if state == store.BreakerHalfOpen {
			defer halfOpen.enter()()
		}
		time.Sleep(5 * time.Second) // two and a half visibility timeouts
		return nil
	}
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("call", probeHandler(slow, make(chan struct{}, 1), &good), engine.HandlerOptions{Breaker: cfg, Timeout: time.Minute})
	pgtest.Start(t, c)
	openBreaker(t, s, c, q, cfg.Name)
	for range 3 {
		pgtest.Send(t, c, q, "probe", engine.SendOptions{Kind: "call"})
	}
	pgtest.Eventually(t, time.Minute, "the three slow jobs archived", func() bool { return pgtest.Archived(t, s, q) == 3 })
	if n := halfOpen.most.Load(); n != 1 {
		t.Fatalf("%d calls ran at once while the breaker was half-open; want its one probe", n)
	}
}
