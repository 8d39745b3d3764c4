package ops

import (
	"context"

	"github.com/pgbus/pgbus/store"
)

// QueueDepth is one queue's messages by state and its DLQ's depth.
type QueueDepth = store.QueueDepth

// Gauges are the numbers a monitoring system samples: each queue's depth
// by state, its DLQ's depth and the age of its oldest ready message, the
// state of each circuit breaker, and how many worker processes run. They
// are read cheaply (no archive is counted), for a scrape every few
// seconds.
type Gauges struct {
	Queues []QueueDepth
	// Breakers maps the name of each circuit breaker in use to its state:
	// closed, open or half_open. A breaker is in use while a running
	// worker process serves a queue whose handler uses it, as Health
	// counts it; one left by stopped processes holds nothing up.
	Breakers map[string]string
	// BreakersHeld counts, for each breaker of Breakers, the jobs it
	// holds (snoozed while it was open, no attempt used), counted for a
	// breaker that is not closed and 0 for a closed one: the jobs a
	// breaker held come out when its open period ends or a reset runs
	// them.
	BreakersHeld map[string]int64
	// WorkersRunning counts the worker processes heartbeating now, as
	// Health and Workers count them.
	WorkersRunning int
	// QueueWorkers counts, for each queue of Queues, the running worker
	// processes that serve it (a priority level's count as its queue's):
	// 0 for a queue left without one while others run.
	QueueWorkers map[string]int
	// Paused holds the queues of Queues that are paused: workers read
	// none of their messages until they are resumed.
	Paused map[string]bool
	// Managed holds the queues of Queues that pgbus manages
	// (store.ManagedQueues), as Health judges them: one left without a
	// worker is pgbus's to page about, while another PGMQ client's queue,
	// which no pgbus worker serves, waits for that client.
	Managed map[string]bool
}

// Gauges reads the gauges of every queue, breaker and worker process. A
// queue dropped (before or while they are read) is left out, or has only
// its DLQ's depth when that holds messages (QueueDepth.Dropped).
func (s *Service) Gauges(ctx context.Context) (_ Gauges, err error) {
	ctx, end, err := s.enter(ctx, "Gauges", reads)
	if err != nil {
		return Gauges{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	queues, err := retryVanished(func() ([]QueueDepth, error) { return s.store.QueueDepths(ctx) })
	if err != nil {
		return Gauges{}, err
	}
	ws, err := s.allWorkers(ctx)
	if err != nil {
		return Gauges{}, err
	}
	breakers, err := s.store.ListBreakers(ctx, "")
	if err != nil {
		return Gauges{}, err
	}
	inUse, held := map[string]string{}, map[string]int64{}
	for _, b := range breakers {
		if len(servedUsers(b, s.now(), func(q string) bool { return coverage(ws, q).Served() })) == 0 {
			continue
		}
		inUse[b.Name], held[b.Name] = b.State, 0
		if b.State == store.BreakerClosed {
			continue
		}
		n, err := s.store.HeldByBreaker(ctx, b.Name)
		if err != nil {
			return Gauges{}, err
		}
		held[b.Name] = n[b.Name]
	}
	// One read of every queue's settings, whatever the number of queues.
	settings, err := s.store.AllQueueSettings(ctx)
	if err != nil {
		return Gauges{}, err
	}
	managed, err := s.store.ManagedQueues(ctx)
	if err != nil {
		return Gauges{}, err
	}
	perQueue, paused, mine := make(map[string]int, len(queues)), map[string]bool{}, make(map[string]bool, len(queues))
	for _, q := range queues {
		perQueue[q.Queue] = coverage(ws, q.Queue).Running
		mine[q.Queue] = managed.Manages(q.Queue) || perQueue[q.Queue] > 0
		if settings[q.Queue].Paused && !q.Dropped {
			paused[q.Queue] = true
		}
	}
	return Gauges{Queues: queues, Breakers: inUse, BreakersHeld: held, WorkersRunning: ws.Running, QueueWorkers: perQueue, Paused: paused, Managed: mine}, nil
}
