package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pgbus/pgbus/store"
)

// queueDropped tells whether err, from a read, is the queue itself gone:
// one of its tables (a priority level's included) no longer exists, as
// after pgbus queue drop or pgmq.drop_queue while its workers run. The
// catalog decides, not the error alone.
func (w *queueWorker) queueDropped(ctx context.Context, err error) bool {
	if !errors.Is(err, store.ErrNotFound) {
		return false
	}
	exists, err := w.queueExists(ctx)
	return err == nil && !exists
}

// queueExists reports whether every physical queue of the worker exists.
func (w *queueWorker) queueExists(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, queue := range w.physical {
		ok, err := w.c.store.QueueExists(ctx, queue)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// waitForQueue waits, after a read found the queue dropped, until it is
// created again or ctx ends. A queue dropped under running workers is most
// often dropped to be made again (a reset, a change of priority levels
// made by hand), and a worker that stopped serving it would leave the new
// queue's messages unrun until someone restarts it; so the workers wait,
// saying so once rather than at every read, and work the queue again once
// it is back, checking for it as often as idle queues are checked. Meanwhile
// the process still registers the queue, which pgbus health reports as
// served by running workers but missing.
func (w *queueWorker) waitForQueue(ctx context.Context) {
	w.c.log.Warn("pgbus: the queue was dropped while its workers ran; they wait for it to be created again ("+w.createCommand()+") and work it once it is; "+
		"to stop serving it, remove it from the worker's queues and restart the worker",
		"queue", w.name)
	said := false // that it was created again in another layout
	for {
		// As often as idle queues are checked, a lookup in the catalog as
		// cheap as that read; a send to the queue made again wakes it at
		// once.
		w.idle(ctx)
		if ctx.Err() != nil {
			return
		}
		exists, err := w.queueExists(ctx)
		if err != nil {
			// The database may be down: the next check tells; the read
			// after the queue is back logs its own failures.
			w.c.log.Debug("pgbus: checking whether the dropped queue was created again failed", "queue", w.name, "err", err)
			continue
		}
		if exists {
			if levels, ok := w.relaidOut(ctx); ok {
				// More levels than it had: it reads those it knows.
				w.c.log.Error(fmt.Sprintf("pgbus: the dropped queue was created again with %s, where this process works it with %s: it works the levels it knows, and the messages of the others wait unrun until the process is restarted; restart it",
					levelsText(levels), levelsText(len(w.physical))), "queue", w.name)
				return
			}
			w.c.log.Info("pgbus: the dropped queue was created again; working it", "queue", w.name)
			return
		}
		if levels, ok := w.relaidOut(ctx); ok && !said {
			said = true
			w.c.log.Error(fmt.Sprintf("pgbus: the dropped queue was created again with %s, where this process works it with %s: it cannot read the new layout, and its messages wait unrun until the process is restarted; restart it",
				levelsText(levels), levelsText(len(w.physical))), "queue", w.name)
		}
	}
}

// relaidOut reports whether the worker's queue exists with other priority
// levels than the worker's, and how many: created again so while the
// worker waited for it.
func (w *queueWorker) relaidOut(ctx context.Context) (int, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	physical, err := w.c.store.PhysicalQueues(ctx, w.name)
	if err != nil || slices.Equal(physical, w.physical) {
		return 0, false
	}
	for _, queue := range physical {
		if ok, err := w.c.store.QueueExists(ctx, queue); err != nil || !ok {
			return 0, false
		}
	}
	return len(physical), true
}

// levelsText words a queue's number of priority levels.
func levelsText(n int) string {
	if n <= 1 {
		return "no priority levels"
	}
	return fmt.Sprintf("%d priority levels", n)
}
