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
	queue      string // physical
	msgID      int64
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
	w.settling.RLock()
	defer w.settling.RUnlock()
	delay := 100 * time.Millisecond
	var written [5]bool // per action, so a retried write does not repeat a part that landed
	for {
		err := w.writeOnce(w.writeBase, queue, batch, &written)
		if err == nil {
			w.record(batch)
			w.settled[queue].Add(int64(len(batch)))
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
		w.c.log.Warn("pgbus: writing outcomes failed; retrying", "queue", queue, "count", len(batch), "err", err, "in", delay.String())
		sleep(w.jobBase, delay)
		delay = min(delay*2, 5*time.Second)
	}
	keys := make([]msgKey, len(batch))
	for i, r := range batch {
		keys[i] = msgKey{queue, r.msgID}
	}
	w.unhold(keys)
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

func (w *queueWorker) writeOnce(ctx context.Context, queue string, batch []result, written *[5]bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var done, snoozeIDs []int64
	var snoozeDelays []time.Duration
	var retryItems []store.RetryItem
	var dead []store.DeadLetterItem
	var discards []store.DiscardItem
	for _, r := range batch {
		switch r.action {
		case actionSucceed:
			done = append(done, r.msgID)
		case actionRetry:
			retryItems = append(retryItems, store.RetryItem{MsgID: r.msgID, Delay: r.delay, Failure: *r.failure})
		case actionSnooze:
			snoozeIDs, snoozeDelays = append(snoozeIDs, r.msgID), append(snoozeDelays, r.delay)
		case actionDiscard:
			discards = append(discards, store.DiscardItem{MsgID: r.msgID, Failure: *r.failure})
		case actionDeadLetter:
			dead = append(dead, store.DeadLetterItem{MsgID: r.msgID, Reason: r.reason, MaxRetries: r.maxRetries, Failure: r.failure})
		}
	}
	steps := [5]func() error{
		actionSucceed: func() error {
			if len(done) == 0 {
				return nil
			}
			var err error
			if w.c.settingsFor(w.name).DeleteOnSuccess {
				_, err = w.c.store.DeleteMany(ctx, queue, done)
			} else {
				_, err = w.c.store.ArchiveMany(ctx, queue, done)
			}
			return err
		},
		actionRetry: func() error {
			_, err := w.c.store.RetryMany(ctx, queue, retryItems)
			return err
		},
		actionSnooze: func() error {
			_, err := w.c.store.SnoozeMany(ctx, queue, snoozeIDs, snoozeDelays)
			return err
		},
		actionDiscard: func() error {
			_, err := w.c.store.DiscardMany(ctx, queue, discards)
			return err
		},
		actionDeadLetter: func() error {
			if len(dead) == 0 {
				return nil
			}
			_, err := w.c.store.DeadLetterMany(ctx, queue, w.dlq, "worker", dead)
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

func (w *queueWorker) record(batch []result) {
	for _, r := range batch {
		w.c.stats.add(w.name, r)
	}
}
