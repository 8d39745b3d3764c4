package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Jobs a breaker held until its cool-off ended are visible from then on:
// once the probe a worker makes succeeds, those no worker read yet are
// released with the others, the first at once and the rest spread over
// the cool-off, still held until their turn, rather than each run as soon
// as a worker reads it, all at once against a downstream that may limit
// its rate. Every one of them runs in the end.
func TestProbeCloseReleasesTheJobsHeldUntilTheCoolOffEnded(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	ctx := testContext(t)
	cfg := &store.BreakerConfig{Name: uniqueName("dep"), FailureThreshold: 1, CoolOff: 20 * time.Second, MaxCoolOff: time.Minute}
	if err := s.EnsureBreaker(ctx, *cfg); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, cfg.Name, []store.BreakerUser{{Queue: q}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BreakerFailure(ctx, cfg.Name, "503"); err != nil {
		t.Fatal(err)
	}
	// 80 jobs held until the cool-off's end, which has passed.
	const held = 80
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (vt, message, headers)
		SELECT now(), '{}', '{"pgbus_kind": "call"}' FROM generate_series(1, $1)`, held); err != nil {
		t.Fatal(err)
	}
	read, err := s.Read(ctx, q, time.Hour, held)
	if err != nil || len(read) != held {
		t.Fatalf("read of the jobs to hold = %d, %v", len(read), err)
	}
	items := make([]store.SnoozeItem, held)
	ids := make([]int64, held)
	for i, m := range read {
		items[i] = store.SnoozeItem{MsgID: m.ID, Delay: time.Hour, Breaker: cfg.Name, ReadCount: m.ReadCount, EnqueuedAt: m.EnqueuedAt}
		ids[i] = m.ID
	}
	if got, err := s.SnoozeMany(ctx, q, items); err != nil || len(got) != held {
		t.Fatalf("hold of %d jobs = %d, %v", held, len(got), err)
	}
	if _, err := s.Pool().Exec(ctx, `WITH b AS (UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 second' WHERE name = $1 RETURNING open_until)
		UPDATE pgmq."q_`+q+`" SET vt = (SELECT open_until FROM b) WHERE msg_id = ANY($2)`, cfg.Name, ids); err != nil {
		t.Fatal(err)
	}

	var ran atomic.Int32
	c := pgtest.NewClient(t, s, q, func(ec *engine.Config) { ec.Queues[0].Concurrency = 1 })
	c.Handle("call", func(context.Context, *engine.Job) error {
		ran.Add(1)
		return nil
	}, engine.HandlerOptions{Breaker: cfg})
	pgtest.Start(t, c)
	// The last of them waits until the end of the cool-off, 20 seconds
	// after the probe: seconds after it, some still wait, held.
	pgtest.Eventually(t, time.Minute, "the probe to close the breaker and the jobs it held to be spread", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE vt > now() + interval '5 seconds' AND headers ? $1`, store.HeaderBreakerHold) > 0
	})
	pgtest.Eventually(t, 2*time.Minute, "every held job to run", func() bool { return ran.Load() == held })
}
