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
// lost, and the queue's other outcomes and its heartbeat go on.
func (w *queueWorker) restoreDLQ(ctx context.Context, count int) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := w.c.store.CreateDLQ(ctx, w.name)
	if err == nil {
		w.c.log.Warn("pgbus: the queue's dead-letter queue was dropped while its workers ran; made it again, empty",
			"queue", w.name, "dlq", w.dlq)
		return true
	}
	w.c.log.Error("pgbus: the queue's dead-letter queue was dropped while its workers ran and could not be made again; "+
		"the messages to dead-letter stay in the queue and come back after their visibility timeout: make it again with "+
		w.createCommand()+" as a role that may create tables",
		"queue", w.name, "dlq", w.dlq, "count", count, "err", err)
	return false
}

// createCommand is the command that makes the queue's missing tables again.
func (w *queueWorker) createCommand() string {
	if n := len(w.tables()); n > 1 {
		return fmt.Sprintf("pgbus queue create %s --priorities %d", w.name, n)
	}
	return "pgbus queue create " + w.name
}
