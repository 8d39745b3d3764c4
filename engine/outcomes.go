package engine

import (
	"context"
	"errors"
	"sync"
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
	queue string      // physical
	claim store.Claim // the read it settles: nothing is written once the message is at another
	// visibleAt is the visibility timeout the read set (store.Message's
	// VisibleAt), on the database's clock: until then no other read could
	// take the message.
	visibleAt time.Time
	table     uint32 // the table the read took the message from (store.Message.Table), for the stats
	kind      string
	action    action
	delay     time.Duration
	// heldBy names the open circuit breaker that snoozes the job, and
	// heldFor, while it is half-open, the probe the job waits out
	// (store.SnoozeItem.Probe).
	heldBy     string
	heldFor    time.Time
	reason     string
	maxRetries int
	failure    *store.Failure
	latency    time.Duration
	abandon    bool
	// downstreamFailure: a retryable failure, which counts against the
	// kind's circuit breaker (bad input and discards do not).
	downstreamFailure bool
	// seen is what the observers were told of the job's start, for telling
	// them its end once the outcome is written; nil without observers, and
	// for a message settled at its read, whose observers the read tells.
	seen *observed
	// stillRunning, for a handler given up on while it ignored its
	// context, is closed once its goroutine returns: until then it holds
	// its slot. late then holds what it returned.
	stillRunning <-chan struct{}
	late         <-chan attempt
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
		w.unwritten.Add(-int64(len(batch)))
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
	// let the queue's other running jobs reappear and run again. It stays
	// held off until the written messages are no longer held, or it would
	// extend the vt a retry just set.
	guard := &vtGuard{mu: &w.settling}
	defer guard.release()
	landed := w.writeLanded(queue, batch, guard)
	w.recordLanded(batch, landed)
	w.settled.of(queue).Add(int64(len(landed)))
	claims := make([]store.Claim, len(all))
	for i, r := range all {
		claims[i] = r.claim
	}
	w.unhold(queue, claims)
	guard.release()
	w.observeLanded(all, batch, landed)
}

// vtGuard holds the heartbeat off (settling) from the first write of a
// batch that sets a vt until released.
type vtGuard struct {
	mu     *sync.RWMutex
	locked bool
}

// hold holds the heartbeat off, once.
func (g *vtGuard) hold() {
	if !g.locked {
		g.mu.RLock()
		g.locked = true
	}
}

// release lets the heartbeat run again, if held off.
func (g *vtGuard) release() {
	if g.locked {
		g.mu.RUnlock()
		g.locked = false
	}
}

// writeLanded writes batch, retrying until it is written, the queue is
// found dropped, or a hard stop, and returns what was written of each
// message, by id: its outcome, or a retry for a dead letter refused. The
// parts written before a write was given up count too. guard is held
// before a part that sets its messages' vt.
func (w *queueWorker) writeLanded(queue string, batch []result, guard *vtGuard) map[int64]action {
	delay := 100 * time.Millisecond
	var written [5]bool // per action, so a retried write does not repeat a part that landed
	landed := make(map[int64]action, len(batch))
	left := map[int64]bool{} // outcomes the database refuses for good (writeApart)
	for {
		start := time.Now()
		err := w.writeOnce(w.writeBase, queue, batch, &written, landed, left, guard.hold)
		if err == nil {
			w.c.outage.answered(start)
			w.outcomesWritten()
			if len(w.gone) > 0 {
				delete(w.gone, queue) // made again: say so again if it goes
			}
			return landed
		}
		if w.dropped(queue, err) {
			if !w.gone[queue] {
				w.gone[queue] = true
				w.c.log.Warn("pgbus: the queue was dropped while its jobs ran; their outcomes are not written, their messages went with it", "queue", queue, "count", len(batch))
			}
			return landed
		}
		if w.jobBase.Err() != nil || errors.Is(err, store.ErrClosed) {
			// A closed Store, or pool, takes no write however long the
			// drain lasts.
			w.c.log.Error("pgbus: could not write outcomes before stopping; the messages will run again after their visibility timeout", "queue", queue, "count", len(batch), "err", err)
			return landed
		}
		if !w.outcomesDenied(w.writeBase, queue, len(batch), err) && !w.writeLockedOut(queue, batch, written, err) && !w.c.quiet(err) {
			w.c.log.Warn(w.c.advised("pgbus: writing outcomes failed; retrying", err), "queue", queue, "count", len(batch), "err", err, "in", delay.String())
		}
		if guard.locked {
			// The messages whose retry or snooze landed are let go first,
			// so that the heartbeat cannot overwrite the vt they were
			// given; then it runs again while the rest of the write waits
			// (a DLQ or archive gone or locked, the database down),
			// keeping the queue's other running jobs, and the rest of
			// these, from reappearing and running again meanwhile.
			w.unhold(queue, vtSet(batch, landed))
			guard.release()
		}
		sleep(w.jobBase, delay)
		delay = min(delay*2, 5*time.Second)
	}
}

// observeLanded tells the observers of the outcomes written, each once,
// and the AbandonObservers of the others: the outcomes of earlier reads
// of a message read again (written, its latest read is counted in its
// place), and those that matched no message or whose write was given up.
// Counted before their writes, a dead letter the database refused was
// counted again at each return of its message, a success whose write a
// stop cut short again when it ran again.
func (w *queueWorker) observeLanded(all, written []result, landed map[int64]action) {
	if len(w.c.observers.list) == 0 {
		return
	}
	latest := make(map[int64]store.Claim, len(written))
	for _, r := range written {
		latest[r.claim.MsgID] = r.claim
	}
	for _, r := range all {
		if r.seen == nil {
			continue
		}
		act, ok := landed[r.claim.MsgID]
		if !ok || latest[r.claim.MsgID] != r.claim {
			w.c.observers.abandoned(r.seen.ctx, r.seen.job)
			continue
		}
		if act != r.action { // a dead letter refused: kept in the queue as a retry
			r.action, r.reason, r.delay = act, "", w.c.settingsFor(w.name).VisibilityTimeout
		}
		w.c.observers.finished(r.seen.ctx, r.seen.job, r, r.seen.a)
	}
}

// vtSet returns the claims of batch whose messages were given a vt by what
// landed of it: a retry, a snooze, or a dead letter refused and kept in the
// queue as a retry.
func vtSet(batch []result, landed map[int64]action) []store.Claim {
	var out []store.Claim
	for _, r := range batch {
		if a, ok := landed[r.claim.MsgID]; ok && (a == actionRetry || a == actionSnooze) {
			out = append(out, r.claim)
		}
	}
	return out
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
// what was written of each message: its outcome, or a retry for a dead
// letter refused (keepFailures). A part the database refuses for a
// constraint of its data is written apart (writeApart), and the outcomes
// it refuses alone noted in left, which later tries leave out with what
// landed. settle is called before a part that sets its messages' vt (a
// retry, a snooze).
func (w *queueWorker) writeOnce(ctx context.Context, queue string, batch []result, written *[5]bool, landed map[int64]action, left map[int64]bool, settle func()) error {
	ctx, cancel := context.WithTimeout(ctx, w.c.cfg.DatabaseCallTimeout)
	defer cancel()
	landAs := func(a action, ids []int64) {
		for _, id := range ids {
			landed[id] = a
		}
	}
	var parts [5][]result
	for _, r := range batch {
		if _, ok := landed[r.claim.MsgID]; ok || left[r.claim.MsgID] {
			continue
		}
		parts[r.action] = append(parts[r.action], r)
	}
	steps := [5]func(rs []result) error{
		actionSucceed: func(rs []result) error {
			done := make([]store.Claim, len(rs))
			for i, r := range rs {
				done[i] = r.claim
			}
			var got []int64
			var err error
			if w.c.settingsFor(w.name).DeleteOnSuccess {
				got, err = w.c.store.DeleteClaimed(ctx, queue, done)
			} else {
				got, err = w.c.store.ArchiveClaimed(ctx, queue, done)
			}
			w.logUnwritten(queue, actionSucceed, rs, got, err)
			landAs(actionSucceed, got)
			return err
		},
		actionRetry: func(rs []result) error {
			retryItems := make([]store.RetryItem, len(rs))
			for i, r := range rs {
				retryItems[i] = store.RetryItem{MsgID: r.claim.MsgID, Delay: r.delay, Failure: *r.failure,
					ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt}
			}
			settle()
			got, err := w.c.store.RetryMany(ctx, queue, retryItems)
			w.logUnwritten(queue, actionRetry, rs, got, err)
			landAs(actionRetry, got)
			return err
		},
		actionSnooze: func(rs []result) error {
			snoozes := make([]store.SnoozeItem, len(rs))
			for i, r := range rs {
				snoozes[i] = store.SnoozeItem{MsgID: r.claim.MsgID, Delay: r.delay, Breaker: r.heldBy, Probe: r.heldFor,
					ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt}
			}
			settle()
			got, err := w.c.store.SnoozeMany(ctx, queue, snoozes)
			w.logUnwritten(queue, actionSnooze, rs, got, err)
			landAs(actionSnooze, got)
			return err
		},
		actionDiscard: func(rs []result) error {
			discards := discardItems(rs)
			got, err := w.c.store.DiscardMany(ctx, queue, discards)
			w.logUnwritten(queue, actionDiscard, rs, got, err)
			landAs(actionDiscard, got)
			return err
		},
		actionDeadLetter: func(rs []result) error {
			dead := make([]store.DeadLetterItem, len(rs))
			for i, r := range rs {
				dead[i] = r.deadLetterItem()
			}
			got, err := w.c.store.DeadLetterMany(ctx, queue, w.dlq, store.SourceWorker, dead)
			if err != nil && w.dlqGone(ctx, queue, err) {
				if !w.restoreDLQ(ctx, len(dead)) {
					landAs(actionRetry, w.keepFailures(ctx, queue, dead, settle))
					return nil // left in the queue, unheld at the end of the batch
				}
				got, err = w.c.store.DeadLetterMany(ctx, queue, w.dlq, store.SourceWorker, dead)
			}
			if err != nil && w.deadLetterDenied(ctx, queue, len(dead), err) {
				landAs(actionRetry, w.keepFailures(ctx, queue, dead, settle))
				return nil // left in the queue, unheld at the end of the batch
			}
			if err == nil {
				w.deadLetterWorks()
			}
			ids := make([]int64, len(got))
			for i, d := range got {
				ids[i] = d.SourceMsgID
				landed[d.SourceMsgID] = actionDeadLetter
			}
			w.logUnwritten(queue, actionDeadLetter, rs, ids, err)
			return err
		},
	}
	for a, step := range steps {
		if written[a] {
			continue
		}
		if rs := parts[a]; len(rs) > 0 {
			err := step(rs)
			if err != nil && store.IntegrityViolation(err) {
				err = w.writeApart(ctx, queue, action(a), rs, step, landed, left)
			}
			if err != nil {
				return err
			}
		}
		written[a] = true
	}
	return nil
}

// discardItems are the writes of the discards rs.
func discardItems(rs []result) []store.DiscardItem {
	out := make([]store.DiscardItem, len(rs))
	for i, r := range rs {
		out[i] = store.DiscardItem{MsgID: r.claim.MsgID, Failure: *r.failure,
			ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt}
	}
	return out
}

// writeApart writes the outcomes rs, all of action a, which the database
// refused to write together for a constraint of the data (a unique key, a
// check: store.IntegrityViolation). Such a write is refused again however
// often it is tried, and, tried again without end, held back every later
// outcome of the queue while each restart ran its succeeded jobs again.
//
// An archive (a success, a discard) is refused so when the archive holds
// a row of the message's id already: an older message's, kept there when
// the queue's ids started again, as an unlogged queue's do after a crash
// of the server. It is written keeping that row, the message deleted
// without its copy, which the log names: the job ran to its end, and
// neither record is lost but the newer copy. Otherwise, or if that is
// refused too, each outcome is written alone, so that the others land;
// one the database refuses alone is left in left and its message in the
// queue, where its job runs again after its visibility timeout, and the
// log names it and the error, for someone to mend what it names. An
// error of another kind is returned, for the batch to be tried again.
func (w *queueWorker) writeApart(ctx context.Context, queue string, a action, rs []result, step func([]result) error, landed map[int64]action, left map[int64]bool) error {
	archives := a == actionDiscard || a == actionSucceed && !w.c.settingsFor(w.name).DeleteOnSuccess
	if archives {
		var archived, deleted []int64
		var err error
		if a == actionDiscard {
			archived, deleted, err = w.c.store.DiscardManyKeepingOlder(ctx, queue, discardItems(rs))
		} else {
			claims := make([]store.Claim, len(rs))
			for i, r := range rs {
				claims[i] = r.claim
			}
			archived, deleted, err = w.c.store.ArchiveClaimedKeepingOlder(ctx, queue, claims)
		}
		if err == nil {
			w.logUnwritten(queue, a, rs, append(archived, deleted...), nil)
			for _, id := range append(archived, deleted...) {
				landed[id] = a
			}
			if len(deleted) > 0 {
				w.c.log.Warn("pgbus: the queue's archive already holds messages of these ids, older ones, as when an unlogged queue's ids start again after a crash of the server; these outcomes are written, and their messages deleted without a copy in the archive, whose older rows are kept",
					"queue", queue, "outcome", a.String(), "ids", deleted)
			}
			return nil
		}
		if !store.IntegrityViolation(err) {
			return err
		}
	}
	for _, r := range rs {
		err := step([]result{r})
		if err == nil {
			continue
		}
		if !store.IntegrityViolation(err) {
			return err
		}
		left[r.claim.MsgID] = true
		w.c.log.Error("pgbus: the database refuses this outcome for a constraint of the data it writes, however often it is tried; the queue's other outcomes are written, and this message is left in the queue, where its job runs again after its visibility timeout until what the error names is mended",
			"queue", queue, "outcome", a.String(), "id", r.claim.MsgID, "err", err)
	}
	return nil
}

// String names the outcome as the log does.
func (a action) String() string {
	switch a {
	case actionSucceed:
		return "success"
	case actionRetry:
		return "retry"
	case actionSnooze:
		return "snooze"
	case actionDiscard:
		return "discard"
	case actionDeadLetter:
		return "dead letter"
	}
	return "unknown"
}

// logUnwritten warns of the outcomes rs of action a that matched no
// message, those not among written, naming their messages: each is no
// longer at the read that ran its job. No write of this worker's failed,
// but its job ran and may run again, or has: its side effects can happen
// twice, which whoever watches the workers needs to know. A write that
// failed says nothing of its messages: it is tried again.
//
// A message whose read's visibility timeout had not passed yet when the
// write ran could be taken by no other read: another client deleted or
// archived it (pgmq.delete, pgmq.archive, a DLQ move), or made it visible
// and read it (pgmq.set_vt), and the timeout is not to blame. Past it, the
// message may have been read again (its heartbeat held back, a run longer
// than it, the database down) or taken so as well.
func (w *queueWorker) logUnwritten(queue string, a action, rs []result, written []int64, err error) {
	if err != nil || len(written) >= len(rs) { // a failed write is tried again
		return
	}
	got := make(map[int64]bool, len(written))
	for _, id := range written {
		got[id] = true
	}
	now := w.c.store.Now()
	var taken, lapsed []int64
	for _, r := range rs {
		switch {
		case got[r.claim.MsgID]:
		case now.Before(r.visibleAt):
			taken = append(taken, r.claim.MsgID)
		default:
			lapsed = append(lapsed, r.claim.MsgID)
		}
	}
	if len(taken) > 0 {
		w.c.log.Warn("pgbus: outcomes not written: another client or reader deleted, archived or took these messages while their jobs ran here, before their visibility timeout passed (pgmq.delete, pgmq.archive, pgmq.set_vt), so whatever it did with them stands and these jobs may run again or already have; if only these workers should settle the queue's messages, find that client",
			"queue", queue, "outcome", a.String(), "ids", taken)
	}
	if len(lapsed) > 0 {
		w.c.log.Warn("pgbus: outcomes not written: their messages are no longer at the reads that ran them, read again once their visibility timeout passed or deleted, archived or taken by another client or reader, so those jobs may run again or already have; check that the queue's visibility timeout outlasts its jobs and that the database stayed up",
			"queue", queue, "outcome", a.String(), "ids", lapsed)
	}
}

// deadLetterItem is the write of a dead-letter outcome.
func (r result) deadLetterItem() store.DeadLetterItem {
	return store.DeadLetterItem{MsgID: r.claim.MsgID, Reason: r.reason, MaxRetries: r.maxRetries, Failure: r.failure,
		ReadCount: r.claim.ReadCount, EnqueuedAt: r.claim.EnqueuedAt}
}

// recordLanded counts the outcomes of batch that were written, as they
// were written (a dead letter refused as the retry that kept it in the
// queue): one that matched no message (another read holds it, whose
// worker counts its own outcome) changed nothing, and counting it would
// count a message twice.
func (w *queueWorker) recordLanded(batch []result, landed map[int64]action) {
	for _, r := range batch {
		if a, ok := landed[r.claim.MsgID]; ok {
			r.action = a
			w.c.stats.add(w.name, r, w.c.store.Now())
		}
	}
}

func (w *queueWorker) record(batch []result) {
	for _, r := range batch {
		w.c.stats.add(w.name, r, w.c.store.Now())
	}
}
