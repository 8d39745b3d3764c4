package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A worker holds the counts of its queue's outcomes until its next flush.
// The queue dropped and made again under its name meanwhile: the counts
// taken for the dropped queue are not written onto the new one, which ran
// nothing, while those of a queue that stayed are written.
func TestCountsOfADroppedQueueAreNotWrittenOntoTheQueueMadeAgain(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	kept := newQueue(t, s, nil)
	other := pgtest.OpenStore(t, pgtest.URL(t)) // the operator's pgbus queue drop and create
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: kept, Concurrency: 2})
		cfg.StatsFlush = time.Hour // only the flush at stop writes the counts
	})
	ok := func(context.Context, *engine.Job) error { return nil }
	c.HandleQueue(q, ok)
	c.HandleQueue(kept, ok)
	stop := pgtest.Start(t, c)
	for range 20 {
		pgtest.Send(t, c, q, 1, engine.SendOptions{})
	}
	for range 3 {
		pgtest.Send(t, c, kept, 1, engine.SendOptions{})
	}
	pgtest.Eventually(t, 30*time.Second, "the outcomes of both queues to be written", func() bool {
		return pgtest.Archived(t, s, q) == 20 && pgtest.Archived(t, s, kept) == 3
	})
	if err := other.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := other.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	stop() // its final flush writes what it counted
	total := func(queue string) int {
		return pgtest.Int(t, s, `SELECT coalesce(sum(succeeded + failed + retried + dead_lettered + discarded + snoozed), 0)::int
			FROM pgbus.stats_minute WHERE queue_name = $1`, queue)
	}
	if n := total(q); n != 0 {
		t.Errorf("the queue made again, which ran nothing, shows %d outcomes: the dropped queue's, counted before its drop; want 0", n)
	}
	if n := total(kept); n != 3 {
		t.Errorf("the queue that stayed shows %d outcomes, want the 3 it ran", n)
	}
}
