package engine

import (
	"context"
	"strings"
	"sync"
	"time"
)

// lastSaid is when something was last logged at warn, for goroutines that
// share it.
type lastSaid struct {
	mu sync.Mutex
	at time.Time
}

// due reports whether every has passed since the last time due said so,
// and if so takes now as that time.
func (s *lastSaid) due(now time.Time, every time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.at) < every {
		return false
	}
	s.at = now
	return true
}

// lockWait is a kind of call the worker makes that another session's
// lock can hold: a read of the queue, or a write of its outcomes.
type lockWait struct {
	what      string    // "reading the queue", as the log says it
	meanwhile string    // what becomes of the messages meanwhile
	said      *lastSaid // when this kind of wait was last logged at warn
}

// lockedOut reports whether err, a call of the kind wait given up at its
// call timeout, waited for a lock another session holds on the tables it
// uses (those of queues and pgbus.failures; the queue's archive when
// archive is set, dlq's table when dlq is not ""), and if so logs who
// holds it and how to end it, at warn once per outageReminder and at debug
// between. Told as the database not answering, it sent whoever read the
// log looking for a server that was up, while a LOCK TABLE, a VACUUM FULL
// or a transaction left open held the queue.
func (w *queueWorker) lockedOut(wait lockWait, queues []string, archive bool, dlq string, err error, attrs ...any) bool {
	if !unanswered(err) {
		return false
	}
	ctx, cancel := context.WithTimeout(w.writeBase, min(w.c.cfg.DatabaseCallTimeout, lockProbeWait))
	defer cancel()
	var held, ends []string
	for _, q := range queues {
		heldBy, terminate, qerr := w.c.store.WriteBlockers(ctx, q, archive, dlq, w.c.cfg.DatabaseCallTimeout)
		if qerr != nil {
			return false // no answer: the outage it looks like
		}
		if heldBy != "" {
			held, ends = append(held, heldBy), append(ends, terminate)
		}
	}
	if len(held) == 0 {
		return false // a slow statement, told as before
	}
	log := w.c.log.Debug
	if wait.said.due(time.Now(), outageReminder) {
		log = w.c.log.Warn
	}
	log("pgbus: "+wait.what+" waits for a lock another session holds on the queue's tables; "+wait.meanwhile+
		", and pgbus retries until the lock is released; if that session is stuck, end it: "+strings.Join(ends, "; "),
		append(attrs, "held_by", strings.Join(held, "; "), "waited", w.c.cfg.DatabaseCallTimeout.String(), "err", err)...)
	return true
}

// lockProbeWait bounds the question lockedOut asks: through an outage it
// gets no answer, and the loop that asks waits this much more before its
// next try.
const lockProbeWait = 5 * time.Second

// writeLockedOut is lockedOut for a write of batch, the outcomes of
// queue: the tables are those its parts not yet written write.
func (w *queueWorker) writeLockedOut(queue string, batch []result, written [5]bool, err error) bool {
	var archive bool
	dlq := ""
	for _, r := range batch {
		switch {
		case written[r.action]:
		case r.action == actionDiscard, r.action == actionSucceed && !w.c.settingsFor(w.name).DeleteOnSuccess:
			archive = true
		case r.action == actionDeadLetter:
			dlq = w.dlq
		}
	}
	wait := lockWait{what: "writing outcomes", meanwhile: "the messages stay held, neither run again nor lost", said: &w.writeLockSaid}
	return w.lockedOut(wait, []string{queue}, archive, dlq, err, "queue", queue, "count", len(batch))
}

// readLockedOut is lockedOut for a read of the queue, which may
// dead-letter what it reads.
func (w *queueWorker) readLockedOut(err error, retryIn time.Duration) bool {
	wait := lockWait{what: "reading the queue", meanwhile: "its messages wait", said: &w.readLockSaid}
	return w.lockedOut(wait, w.tables(), false, w.dlq, err, "queue", w.name, "in", retryIn.String())
}

// heartbeatLockedOut is lockedOut for an extension of the visibility
// timeout of the messages of queue the worker holds.
func (w *queueWorker) heartbeatLockedOut(queue string, count int, err error) bool {
	wait := lockWait{what: "extending the visibility timeout of the running jobs", meanwhile: "if it lasts past their visibility timeout, their messages may be read again once it is released, and run again beside them", said: &w.heartbeatLockSaid}
	return w.lockedOut(wait, []string{queue}, false, "", err, "queue", queue, "count", count)
}
