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
	// WorkersRunning counts the worker processes heartbeating now, as
	// Health and Workers count them.
	WorkersRunning int
	// QueueWorkers counts, for each queue of Queues, the running worker
	// processes that serve it (a priority level's count as its queue's):
	// 0 for a queue left without one while others run.
	QueueWorkers map[string]int
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
	inUse := map[string]string{}
	for _, b := range breakers {
		if len(servedUsers(b, s.now(), func(q string) bool { return coverage(ws, q).Served() })) > 0 {
			inUse[b.Name] = b.State
		}
	}
	perQueue := make(map[string]int, len(queues))
	for _, q := range queues {
		perQueue[q.Queue] = coverage(ws, q.Queue).Running
	}
	return Gauges{Queues: queues, Breakers: inUse, WorkersRunning: ws.Running, QueueWorkers: perQueue}, nil
}
