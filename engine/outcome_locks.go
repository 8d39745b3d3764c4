package engine

import (
	"context"
	"time"
)

// lockedOut reports whether a write of batch, the outcomes of queue, that
// ran out its call timeout waited for a lock another session holds on the
// tables its parts not yet written write, and if so logs who holds it and how to end it, at
// warn once per outageReminder and at debug between. Told as the database
// not answering, it sent whoever read the log looking for a server that
// was up, while a LOCK TABLE, a VACUUM FULL or a transaction left open
// held the queue's outcomes (and, behind them, its later ones).
func (w *queueWorker) lockedOut(queue string, batch []result, written [5]bool, err error) bool {
	if !unanswered(err) {
		return false
	}
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
	ctx, cancel := context.WithTimeout(w.writeBase, w.c.cfg.DatabaseCallTimeout)
	defer cancel()
	heldBy, terminate, qerr := w.c.store.WriteBlockers(ctx, queue, archive, dlq)
	if qerr != nil || heldBy == "" {
		return false // no answer: the outage it looks like; or a slow statement
	}
	log := w.c.log.Debug
	if now := time.Now(); now.Sub(w.lockSaid) >= outageReminder {
		w.lockSaid, log = now, w.c.log.Warn
	}
	log("pgbus: writing outcomes waits for a lock another session holds on the queue's tables; the messages stay held, neither run again nor lost, "+
		"and pgbus retries until the lock is released; if that session is stuck, end it: "+terminate,
		"queue", queue, "count", len(batch), "held_by", heldBy, "waited", w.c.cfg.DatabaseCallTimeout.String(), "err", err)
	return true
}
