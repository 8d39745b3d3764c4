package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A queue's reads start at the head of its vt index, and every message
// done leaves dead entries and row versions behind (one from its read, one
// from its archive). Until a vacuum removes them each read steps over all
// of them, so a drain slows as it goes: a 400,000-message backlog ran at
// half the rate of a small one. Autovacuum wakes once a minute at best,
// far too late for a queue moving thousands of messages a second, so the
// worker vacuums the table itself after every VacuumAfter settled
// messages; with that the drain keeps its rate to the end. Those vacuums
// leave the table's size alone (giving pages back stalls every reader of
// the table); once the queue goes quiet after VacuumAfter messages or
// more, one more vacuum shrinks the table, so a drained backlog does not
// leave it large.

// vacuumCheck is how often the settled counts are looked at.
const vacuumCheck = time.Second

// settledCounts counts, per physical queue, the messages this worker
// settled since it started. A queue made again with other priority levels
// brings tables the worker did not start with, counted from their first
// settled message.
type settledCounts struct{ m sync.Map } // physical queue -> *atomic.Int64

func (s *settledCounts) of(queue string) *atomic.Int64 {
	if n, ok := s.m.Load(queue); ok {
		return n.(*atomic.Int64)
	}
	n, _ := s.m.LoadOrStore(queue, new(atomic.Int64))
	return n.(*atomic.Int64)
}

// vacuumMarks are a physical queue's settled count at its last vacuum, at
// its last shrinking vacuum, and at the last check; and whether the role's
// privileges were checked, and found lacking, at its first vacuum due.
type vacuumMarks struct {
	vacuumed, shrunk, seen int64
	checked, notOwner      bool
}

// vacuumLoop vacuums each physical queue's table once VacuumAfter of its
// messages were settled since the last time, and shrinks it when the queue
// goes quiet after as many, until ctx ends.
func (w *queueWorker) vacuumLoop(ctx context.Context) {
	if w.c.cfg.VacuumAfter < 0 {
		return
	}
	t := time.NewTicker(vacuumCheck)
	defer t.Stop()
	marks := map[string]*vacuumMarks{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, queue := range w.tables() {
			if marks[queue] == nil {
				marks[queue] = &vacuumMarks{}
			}
			w.vacuumIfDue(ctx, queue, marks[queue])
		}
	}
}

// mayVacuum reports whether this worker's role may vacuum the queue's
// table. One that may not (it does not own the table) leaves it to
// autovacuum, saying so once, rather than have PostgreSQL warn and skip
// every time. An error of the check counts as may: the vacuum's own error
// is logged then.
func (w *queueWorker) mayVacuum(ctx context.Context, queue string) bool {
	var may bool
	err := w.c.bounded(ctx, func(ctx context.Context) (err error) {
		may, err = w.c.store.MayVacuum(ctx, queue)
		return err
	})
	if err != nil || may {
		return true
	}
	w.c.log.Info("pgbus: this role does not own the queue table, so autovacuum alone vacuums it; run workers as the role that created the queues to have them vacuumed and shrunk as they work",
		"queue", queue)
	return false
}

func (w *queueWorker) vacuumIfDue(ctx context.Context, queue string, m *vacuumMarks) {
	if m.notOwner {
		return
	}
	after := int64(w.c.cfg.VacuumAfter)
	total := w.settled.of(queue).Load()
	quiet := total == m.seen
	m.seen = total
	shrink := quiet && total-m.shrunk >= after
	if !shrink && total-m.vacuumed < after {
		return
	}
	m.vacuumed = total
	if shrink {
		m.shrunk = total
	}
	if !m.checked {
		m.checked = true
		if m.notOwner = !w.mayVacuum(ctx, queue); m.notOwner {
			return
		}
	}
	err := w.c.bounded(ctx, func(ctx context.Context) error {
		return w.c.store.VacuumQueue(ctx, queue, shrink)
	})
	if err != nil && ctx.Err() == nil {
		w.c.log.Warn("pgbus: vacuuming the queue table failed; autovacuum is left to it", "queue", queue, "err", err)
	}
}
