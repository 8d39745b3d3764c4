package engine

import (
	"context"
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
// messages; with that the drain keeps its rate to the end.

// vacuumCheck is how often the settled counts are looked at.
const vacuumCheck = time.Second

// settled counts, per physical queue, the messages settled since the
// table was last vacuumed.
type settledCounts map[string]*atomic.Int64

func newSettledCounts(physical []string) settledCounts {
	out := make(settledCounts, len(physical))
	for _, q := range physical {
		out[q] = new(atomic.Int64)
	}
	return out
}

// vacuumLoop vacuums each physical queue's table once VacuumAfter of its
// messages were settled since the last time, until ctx ends.
func (w *queueWorker) vacuumLoop(ctx context.Context) {
	if w.c.cfg.VacuumAfter < 0 {
		return
	}
	t := time.NewTicker(vacuumCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, queue := range w.physical {
			n := w.settled[queue]
			if n.Load() < int64(w.c.cfg.VacuumAfter) {
				continue
			}
			n.Store(0)
			if err := w.c.store.VacuumQueue(ctx, queue); err != nil && ctx.Err() == nil {
				w.c.log.Warn("pgbus: vacuuming the queue table failed; autovacuum is left to it", "queue", queue, "err", err)
			}
		}
	}
}
