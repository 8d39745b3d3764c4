package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/store"
)

// dlqGone tells whether err, from a dead-letter write of physical queue
// queue, is the queue's DLQ missing while the queue is still there: its DLQ
// was dropped by hand (DROP TABLE, pgmq.drop_queue) while workers ran. No
// retry of the write mends that.
func (w *queueWorker) dlqGone(ctx context.Context, queue string, err error) bool {
	if !errors.Is(err, store.ErrNotFound) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	source, err1 := w.c.store.QueueExists(ctx, queue)
	dlq, err2 := w.c.store.QueueExists(ctx, w.dlq)
	return err1 == nil && err2 == nil && source && !dlq
}

// restoreDLQ makes the queue's DLQ again, empty, as a worker does at start
// for a queue without one, and reports whether it did. When it cannot (the
// role may not create tables), the count messages to dead-letter are left
// in the queue: their claims are not extended (the writer of outcomes
// records their failures, keepFailures), so they run again after their
// visibility timeout, and the log says how to make the DLQ. Nothing is
// lost, and the queue's other outcomes and its heartbeat go on. A stop
// that cuts the create short, or an outage, is said as such, not as a
// privilege the role lacks.
func (w *queueWorker) restoreDLQ(ctx context.Context, count int) bool {
	stopped := ctx
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := w.c.store.CreateDLQ(ctx, w.name)
	attrs := []any{"queue", w.name, "dlq", w.dlq, "count", count, "err", err}
	switch {
	case err == nil:
		w.c.log.Warn("pgbus: the queue's dead-letter queue was dropped while its workers ran; made it again, empty",
			"queue", w.name, "dlq", w.dlq)
		return true
	case stopped.Err() != nil:
		w.c.log.Warn("pgbus: a stop came while the queue's dead-letter queue, dropped while its workers ran, was being made again; "+
			"the messages to dead-letter stay in the queue and come back after their visibility timeout", attrs...)
		return false
	case ctx.Err() != nil:
		w.c.log.Warn("pgbus: the queue's dead-letter queue was dropped while its workers ran, and making it again took longer than 30s (another session may hold the queue's lock); "+
			"the messages to dead-letter stay in the queue and come back after their visibility timeout, to be tried again", attrs...)
		return false
	case store.IsUnreachable(err):
		w.c.log.Warn("pgbus: the queue's dead-letter queue was dropped while its workers ran, and the database could not be reached to make it again; "+
			"the messages to dead-letter stay in the queue and come back after their visibility timeout, to be tried again", attrs...)
		return false
	}
	again, levels := w.createAgain()
	w.c.log.Error("pgbus: the queue's dead-letter queue was dropped while its workers ran and could not be made again; "+
		"the messages to dead-letter stay in the queue and come back after their visibility timeout: "+again+" as a role that may create tables",
		append(attrs, levels...)...)
	return false
}

// createAgain says how to make the queue's missing tables again, in words
// that name no front end (the log is read by whoever runs the worker, with
// whatever tool they create queues with), and the log attribute of its
// priority levels, nil for a queue without levels: created with another
// count it is refused, as it exists in another layout.
func (w *queueWorker) createAgain() (string, []any) {
	if n := len(w.tables()); n > 1 {
		return fmt.Sprintf("create the queue again with its %d priority levels", n), []any{"priority_levels", n}
	}
	return "create the queue again", nil
}
