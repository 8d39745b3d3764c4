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
	for _, queue := range w.tables() {
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
// it is back, with the priority levels it is made with, checking for it as
// often as idle queues are checked. Meanwhile the process still registers
// the queue, which pgbus health reports as served by running workers but
// missing.
func (w *queueWorker) waitForQueue(ctx context.Context) {
	again, levels := w.createAgain()
	w.c.log.Warn("pgbus: the queue was dropped while its workers ran; they wait for it to be created again ("+again+") and work it once it is; "+
		"to stop serving it, remove it from the worker's queues and restart the worker",
		append([]any{"queue", w.name}, levels...)...)
	for {
		// As often as idle queues are checked, a lookup in the catalog as
		// cheap as that read; a send to the queue made again wakes it at
		// once.
		w.idle(ctx)
		if ctx.Err() != nil {
			return
		}
		relaid := w.relayout(ctx) // which says so
		back := relaid
		if !relaid {
			exists, err := w.queueExists(ctx)
			if err != nil {
				// The database may be down: the next check tells; the read
				// after the queue is back logs its own failures.
				w.c.log.Debug("pgbus: checking whether the dropped queue was created again failed", "queue", w.name, "err", err)
				continue
			}
			back = exists
		}
		if back && w.settingsOfTheNewQueue(ctx) {
			if !relaid {
				w.c.log.Info("pgbus: the dropped queue was created again; working it", "queue", w.name)
			}
			return
		}
	}
}

// settingsOfTheNewQueue reads the settings of the queue made again before
// its workers read it, and reports whether it could: those read while it
// was gone (the defaults) or before it was dropped would otherwise decide
// the retries, backoff and visibility of its first messages until the
// next refresh.
func (w *queueWorker) settingsOfTheNewQueue(ctx context.Context) bool {
	if err := w.c.refreshSettings(ctx); err != nil {
		w.c.log.Debug("pgbus: reading the settings of the queue made again failed", "queue", w.name, "err", err)
		return false
	}
	return true
}

// relayout reads the queue's priority levels again and, when the queue
// exists with other levels than the worker reads (dropped and made again
// with them while it ran), works those from now on, saying so. It reports
// whether it did. Before, the worker read the levels it started with until
// a restart: none of a layout with fewer, and only those it knew of one
// with more, while the new levels' messages waited unrun.
func (w *queueWorker) relayout(ctx context.Context) bool {
	old := w.tables()
	physical, ok := w.relaidOut(ctx, old)
	if !ok {
		return false
	}
	w.layout.Store(&physical)
	w.c.layouts.Add(1) // the listener's index of tables
	w.c.log.Info(fmt.Sprintf("pgbus: the queue was made again with %s, where this worker read %s: it works the new layout",
		levelsText(len(physical)), levelsText(len(old))), "queue", w.name)
	return true
}

// relaidOut reports whether the worker's queue exists with other priority
// levels than old, the worker's, and its physical queues if so.
func (w *queueWorker) relaidOut(ctx context.Context, old []string) ([]string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	physical, err := w.c.store.PhysicalQueues(ctx, w.name)
	if err != nil || slices.Equal(physical, old) {
		return nil, false
	}
	for _, queue := range physical {
		if ok, err := w.c.store.QueueExists(ctx, queue); err != nil || !ok {
			return nil, false
		}
	}
	return physical, true
}

// levelsText words a queue's number of priority levels.
func levelsText(n int) string {
	if n <= 1 {
		return "no priority levels"
	}
	return fmt.Sprintf("%d priority levels", n)
}
