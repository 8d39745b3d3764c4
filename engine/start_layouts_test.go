package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A client's start reads the priority levels of all its queues at once: it
// asked twice per queue, hundreds of statements for a worker of a fleet.
// A queue with levels is still worked through them, and a level named as
// a queue of its own is still refused.
func TestStartReadsTheLevelsOfAllQueuesAtOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	s := testStore(t)
	ctx := testContext(t)
	counting, asked := pgtest.CountingStore(t, url, "pgbus.queues")
	pq := newPriorityQueue(t, s, 2)
	check := func(queues []string) error {
		t.Helper()
		c := pgtest.NewClient(t, counting, queues[0], func(cfg *engine.Config) {
			for _, q := range queues[1:] {
				cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: q, Concurrency: 1})
			}
		})
		asked.Store(0)
		if err := engine.CheckQueues(ctx, c); err != nil {
			return err
		}
		if got := engine.PhysicalOf(c, pq); !slices.Equal(got, []string{store.PriorityQueueName(pq, 0), store.PriorityQueueName(pq, 1)}) {
			t.Errorf("the worker of %s reads %v, want its 2 levels", pq, got)
		}
		return nil
	}
	queues := []string{pq}
	for range 8 {
		queues = append(queues, newQueue(t, s, nil))
	}
	if err := check(queues); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("checking %d queues read pgbus.queues %d times, want once", len(queues), n)
	}
	err := check(append(queues, store.PriorityQueueName(pq, 1)))
	if err == nil || !strings.Contains(err.Error(), "is priority level 1 of queue") {
		t.Errorf("a level worked as a queue: %v; want it refused", err)
	}
}
