package engine

import (
	"context"
	"errors"
	"time"

	"github.com/pgbus/pgbus/store"
)

type action int

const (
	actionSucceed action = iota
	actionRetry
	actionDeadLetter
	actionDiscard
	actionSnooze
)

// result is the settled outcome of one delivery, waiting to be written.
type result struct {
	queue      string      // physical
	claim      store.Claim // the read it settles: nothing is written once the message is at another
	kind       string
	action     action
	delay      time.Duration
	reason     string
	maxRetries int
	failure    *store.Failure
	latency    time.Duration
	abandon    bool
	// downstreamFailure: a retryable failure, which counts against the
	// kind's circuit breaker (bad input and discards do not).
	downstreamFailure bool
}

func (r result) deadLetter(reason string, f *store.Failure) result {
	r.action, r.reason, r.failure = actionDeadLetter, reason, f
	return r
}

func asControl(err error) (*controlError, bool) {
	var ce *controlError
	ok := errors.As(err, &ce)
	return ce, ok
}

// maxOutcomeBatch bounds one write; what arrives meanwhile waits its turn.
const maxOutcomeBatch = 1000

// writeOutcomes batches whatever outcomes are waiting and writes each kind
// of them in one statement, until the channel closes.
func (w *queueWorker) writeOutcomes() {
	for first := range w.outcomes {
		batch := []result{first}
	gather:
		for len(batch) < maxOutcomeBatch {
			select {
			case r, ok := <-w.outcomes:
				if !ok {
					break gather
				}
				batch = append(batch, r)
			default:
				break gather
			}
		}
		w.writeBatch(batch)
	}
}

// writeBatch writes a batch, retrying while the database is unreachable. It
// gives up at a hard stop, whose messages reappear after their visibility
// timeout, so nothing is lost (delivery is at least once), and on a queue
// dropped meanwhile, whose messages went with it.
func (w *queueWorker) writeBatch(batch []result) {
	byQueue := map[string][]result{}
	for _, r := range batch {
		byQueue[r.queue] = append(byQueue[r.queue], r)
	}
	for queue, rs := range byQueue {
		w.writeQueueBatch(queue, rs)
	}
}

func (w *queueWorker) writeQueueBatch(queue string, batch []result) {
	all := batch
	if batch = latestReads(batch); len(batch) < len(all) {
		w.c.log.Debug("pgbus: outcomes of reads whose claims lapsed before a later read of the same message are not written", "queue", queue, "count", len(all)-len(batch))
	}
	// Only a retry or a snooze sets a vt the heartbeat could overwrite; the
	// other outcomes take their messages out of the queue. The heartbeat is
	// held off from the first of those writes on, not while the others
	// wait (for a lock on the archive, a slow database): held off then, it
	// let the queue's other running jobs reappear and run again.
	locked := false
	settle := func() {
		if !locked {
			w.settling.RLock()
			locked = true
		}
	}
	defer func() {
		if locked {
			w.settling.RUnlock()
		}
	}()
	delay := 100 * time.Millisecond
	var written [5]bool // per action, so a retried write does not repeat a part that landed
	landed := make(map[int64]bool, len(batch))
	for {
		err := w.writeOnce(w.writeBase, queue, batch, &written, landed, settle)
		if err == nil {
			w.outcomesWritten()
			w.recordLanded(batch, landed)
			w.settled[queue].Add(int64(len(landed)))
			if len(w.gone) > 0 {
				delete(w.gone, queue) // made again: say so again if it goes
			}
			break
		}
		if w.dropped(queue, err) {
			if !w.gone[queue] {
				w.gone[queue] = true
				w.c.log.Warn("pgbus: the queue was dropped while its jobs ran; their outcomes are not written, their messages went with it", "queue", queue, "count", len(batch))
			}
			break
		}
		if w.jobBase.Err() != nil {
			w.c.log.Error("pgbus: could not write outcomes before stopping; the messages will run again after their visibility timeout", "queue", queue, "count", len(batch), "err", err)
			break
		}
		if !w.outcomesDenied(w.writeBase, queue, len(batch), err) {
			w.c.log.Warn("pgbus: writing outcomes failed; retrying", "queue", queue, "count", len(batch), "err", err, "in", delay.String())
		}
		if locked && !setVT(batch, written) {
			// No retry or snooze landed, so no vt they set can be
			// overwritten: the heartbeat may run meanwhile, keeping the
			// queue's other running jobs, and these, from reappearing
			// while the write waits (a DLQ or archive gone, the
			// database down).
			w.settling.RUnlock()
			locked = false
		}
		sleep(w.jobBase, delay)
		delay = min(delay*2, 5*time.Second)
	}
	claims := make([]store.Claim, len(all))
	for i, r := range all {
		claims[i] = r.claim
	}
	w.unhold(queue, claims)
}

// setVT reports whether a part of batch that sets its messages' vt (a
// retry, a snooze) was written.
func setVT(batch []result, written [5]bool) bool {
	for _, r := range batch {
		if (r.action == actionRetry || r.action == actionSnooze) && written[r.action] {
			return true
		}
	}
	return false
}

// latestReads keeps, of the outcomes of one message, the one of its latest
// read. Two reads of a message in one batch mean the first one's claim
// lapsed and the message was read again: the outcome is the later run's.
// Writing both would be refused (a dead letter lists a message once) and
// retried without end, or record the earlier run's failure on it.
func latestReads(batch []result) []result {
	latest := make(map[int64]int, len(batch))
	for i, r := range batch {
		if j, ok := latest[r.claim.MsgID]; !ok || r.claim.ReadCount > batch[j].claim.ReadCount {
			latest[r.claim.MsgID] = i
		}
	}
	if len(latest) == len(batch) {
		return batch
	}
	out := make([]result, 0, len(latest))
	for i, r := range batch {
		if latest[r.claim.MsgID] == i {
			out = append(out, r)
		}
	}
	return out
}

// dropped tells whether a write failed because its queue's table is gone,
// which no retry can mend. The catalog decides, not the error alone: a
// missing archive or DLQ leaves the messages in the queue, where they
// must not be given up.
func (w *queueWorker) dropped(queue string, err error) bool {
	if !errors.Is(err, store.ErrNotFound) {
		return false
	}
	ctx, cancel := context.WithTimeout(w.writeBase, 10*time.Second)
	defer cancel()
	exists, err := w.c.store.QueueExists(ctx, queue)
	return err == nil && !exists
}

// writeOnce writes the parts of batch not written yet, and notes in landed
// the ids of the messages whose outcomes were written. settle is called
// before a part that sets its messages' vt (a retry, a snooze).
func (w *queueWorker) writeOnce(ctx context.Context, queue string, batch []result, written *[5]bool, landed map[int64]bool, settle func()) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	land := func(ids []int64) {
		for _, id := range ids {
			landed[id] = true
		}
	}
	var done []store.Claim
	var snoozes []store.SnoozeItem
	var retryItems []store.RetryItem
	var dead []store.DeadLetterItem
	var discards []store.DiscardItem
	for _, r := range batch {
		switch r.action {
		case actionSucceed:
			done = append(done, r.claim)
		case actionRetry:
			retryItems = append(retryItems, store.RetryItem{MsgID: r.claim.MsgID, Delay: r.delay, Failure: *r.failure,
				ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt})
		case actionSnooze:
			snoozes = append(snoozes, store.SnoozeItem{MsgID: r.claim.MsgID, Delay: r.delay,
				ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt})
		case actionDiscard:
			discards = append(discards, store.DiscardItem{MsgID: r.claim.MsgID, Failure: *r.failure,
				ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt})
		case actionDeadLetter:
			dead = append(dead, r.deadLetterItem())
		}
	}
	steps := [5]func() error{
		actionSucceed: func() error {
			if len(done) == 0 {
				return nil
			}
			var got []int64
			var err error
			if w.c.settingsFor(w.name).DeleteOnSuccess {
				got, err = w.c.store.DeleteClaimed(ctx, queue, done)
			} else {
				got, err = w.c.store.ArchiveClaimed(ctx, queue, done)
			}
			w.logUnwritten(queue, "success", len(done), len(got))
			land(got)
			return err
		},
		actionRetry: func() error {
			if len(retryItems) == 0 {
				return nil
			}
			settle()
			got, err := w.c.store.RetryMany(ctx, queue, retryItems)
			w.logUnwritten(queue, "retry", len(retryItems), len(got))
			land(got)
			return err
		},
		actionSnooze: func() error {
			if len(snoozes) == 0 {
				return nil
			}
			settle()
			got, err := w.c.store.SnoozeMany(ctx, queue, snoozes)
			w.logUnwritten(queue, "snooze", len(snoozes), len(got))
			land(got)
			return err
		},
		actionDiscard: func() error {
			got, err := w.c.store.DiscardMany(ctx, queue, discards)
			w.logUnwritten(queue, "discard", len(discards), len(got))
			land(got)
			return err
		},
		actionDeadLetter: func() error {
			if len(dead) == 0 {
				return nil
			}
			got, err := w.c.store.DeadLetterMany(ctx, queue, w.dlq, store.SourceWorker, dead)
			if err != nil && w.dlqGone(ctx, queue, err) {
				if !w.restoreDLQ(ctx, len(dead)) {
					w.keepFailures(ctx, queue, dead, settle)
					return nil // left in the queue, unheld at the end of the batch
				}
				got, err = w.c.store.DeadLetterMany(ctx, queue, w.dlq, store.SourceWorker, dead)
			}
			if err != nil && w.deadLetterDenied(ctx, queue, len(dead), err) {
				w.keepFailures(ctx, queue, dead, settle)
				return nil // left in the queue, unheld at the end of the batch
			}
			if err == nil {
				w.deadLetterWorks()
			}
			w.logUnwritten(queue, "dead letter", len(dead), len(got))
			for _, d := range got {
				landed[d.SourceMsgID] = true
			}
			return err
		},
	}
	for a, step := range steps {
		if written[a] {
			continue
		}
		if err := step(); err != nil {
			return err
		}
		written[a] = true
	}
	return nil
}

// logUnwritten notes outcomes that matched no message: each message was
// read again after its claim lapsed, and another worker holds it now, or it
// is gone (its queue dropped, maybe made again with new messages under the
// same ids). That is no failure of this worker's: the message is not its
// own any more.
func (w *queueWorker) logUnwritten(queue, what string, sent, written int) {
	if written < sent {
		w.c.log.Debug("pgbus: outcomes not written: their messages are no longer at the reads that ran them",
			"queue", queue, "outcome", what, "count", sent-written)
	}
}

// deadLetterItem is the write of a dead-letter outcome.
func (r result) deadLetterItem() store.DeadLetterItem {
	return store.DeadLetterItem{MsgID: r.claim.MsgID, Reason: r.reason, MaxRetries: r.maxRetries, Failure: r.failure,
		ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt}
}

// recordLanded counts the outcomes of batch that were written: one that
// matched no message (another read holds it, whose worker counts its own
// outcome) changed nothing, and counting it would count a message twice.
func (w *queueWorker) recordLanded(batch []result, landed map[int64]bool) {
	for _, r := range batch {
		if landed[r.claim.MsgID] {
			w.c.stats.add(w.name, r)
		}
	}
}

func (w *queueWorker) record(batch []result) {
	for _, r := range batch {
		w.c.stats.add(w.name, r)
	}
}
