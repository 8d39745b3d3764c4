package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pgbus/pgbus/store"
)

// idleQueues are the workers whose last read found their queue empty,
// waiting for a notification or for a check of all of them that finds a
// message visible in theirs (a retry whose backoff ended, a message sent
// by a client that does not notify, one whose visibility timeout ran out).
// One statement per poll interval checks them all, where each worker's
// own read every interval cost hundreds of queues a transaction each.
type idleQueues struct {
	mu      sync.Mutex
	waiting map[*queueWorker]struct{}
	now     chan struct{}
}

// checkNow has the idle queues checked at once, not at the next poll
// interval: notifications may have been missed.
func (q *idleQueues) checkNow() {
	select {
	case q.kick() <- struct{}{}:
	default:
	}
}

func (q *idleQueues) kick() chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.now == nil {
		q.now = make(chan struct{}, 1)
	}
	return q.now
}

func (q *idleQueues) add(w *queueWorker) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiting == nil {
		q.waiting = map[*queueWorker]struct{}{}
	}
	q.waiting[w] = struct{}{}
}

func (q *idleQueues) remove(w *queueWorker) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.waiting, w)
}

// byTable maps each physical queue of the waiting workers to its worker,
// and lists the tables in a stable order, so that the check's statement
// reads the same while the same queues are idle.
func (q *idleQueues) byTable() (map[string]*queueWorker, []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	of := make(map[string]*queueWorker, len(q.waiting))
	for w := range q.waiting {
		for _, t := range w.tables() {
			of[t] = w
		}
	}
	tables := make([]string, 0, len(of))
	for t := range of {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	return of, tables
}

// waitForWork waits, after a read that found the queue empty, until a
// notification or the check of idle queues wakes the worker, or ctx ends.
func (w *queueWorker) waitForWork(ctx context.Context) {
	w.c.idle.add(w)
	defer w.c.idle.remove(w)
	select {
	case <-ctx.Done():
	case <-w.wake:
	}
}

// checkIdle checks the idle queues every poll interval and wakes the
// workers of those holding a visible message. A check that fails wakes
// each worker of its tables instead, whose own read then meets what the
// check met (a queue dropped, a refused privilege, an outage) and deals
// with it as ever.
func (c *Client) checkIdle(ctx context.Context) {
	t := time.NewTicker(c.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.idle.kick():
		}
		of, tables := c.idle.byTable()
		for part := range slices.Chunk(tables, store.MaxReadyCheck) {
			var ready []string
			start := time.Now()
			err := c.bounded(ctx, func(ctx context.Context) (err error) {
				ready, err = c.store.ReadyQueues(ctx, part)
				return err
			})
			switch {
			case err == nil:
				// The reads of idle workers: the end of an outage is
				// seen by them as by a worker's read.
				c.outage.answered(start)
			case ctx.Err() != nil:
				return
			default:
				c.log.Debug("pgbus: the check of idle queues for visible messages failed; their workers read them instead", "queues", len(part), "err", err)
				ready = part
			}
			for _, t := range ready {
				of[t].poke()
			}
		}
	}
}
