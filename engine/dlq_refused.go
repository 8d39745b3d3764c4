package engine

import (
	"context"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// deadLetterDenied tells whether err, from a dead-letter write of physical
// queue queue, is the database refusing it for want of a privilege: the
// workers' role was not granted the queue's DLQ (made after the grants,
// without ALTER DEFAULT PRIVILEGES) or pgbus.failures. No retry mends
// that; the count messages to dead-letter are left in the queue. The
// first refusal since dead-lettering last worked logs what to grant, so
// that a message coming back every visibility timeout does not repeat it.
func (w *queueWorker) deadLetterDenied(ctx context.Context, queue string, count int, err error) bool {
	if !store.IsPermissionDenied(err) {
		return false
	}
	if w.deadLetterRefused.CompareAndSwap(false, true) {
		w.logDeadLetterRefused(ctx, queue, count, err)
	}
	return true
}

// deadLetterWorks notes a dead-letter write that landed, saying so once
// when it had been refused.
func (w *queueWorker) deadLetterWorks() {
	if w.deadLetterRefused.CompareAndSwap(true, false) {
		w.c.log.Info("pgbus: dead-lettering works again: the messages left in the queue for want of a privilege go to its DLQ as they come back",
			"queue", w.name, "dlq", w.dlq)
	}
}

func (w *queueWorker) logDeadLetterRefused(ctx context.Context, queue string, count int, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	const what = "pgbus: this database role may not dead-letter the queue's messages; they stay in the queue, their failures recorded, " +
		"and come back after their visibility timeout while its other messages run: "
	grants, gerr := w.c.store.DeadLetterGrants(ctx, queue, w.dlq)
	if gerr != nil || len(grants) == 0 {
		w.c.log.Error(what+"grant the role SELECT, INSERT, UPDATE and DELETE on the queue's tables, its DLQ's and pgbus.failures, "+
			"as the role that owns them (ALTER DEFAULT PRIVILEGES, run as the role that creates queues, covers the queues created later)",
			"queue", w.name, "dlq", w.dlq, "count", count, "err", err)
		return
	}
	w.c.log.Error(what+grantAdvice(grants), "queue", w.name, "dlq", w.dlq, "count", count, "err", err)
}

// grantAdvice says, for each owner of the tables in grants, the GRANT
// statements to run as it; to an owner of a queue's table, the ALTER
// DEFAULT PRIVILEGES too, which spares the queues it creates later the
// same refusal.
func grantAdvice(grants []store.MissingGrant) string {
	var owners []string
	byOwner := map[string][]string{}
	createsQueues := map[string]bool{}
	for _, g := range grants {
		if _, ok := byOwner[g.Owner]; !ok {
			owners = append(owners, g.Owner)
		}
		byOwner[g.Owner] = append(byOwner[g.Owner], "GRANT "+strings.Join(g.Privileges, ", ")+" ON "+g.Table+" TO "+g.Role)
		createsQueues[g.Owner] = createsQueues[g.Owner] || strings.HasPrefix(g.Table, "pgmq.")
	}
	parts := make([]string, 0, len(owners))
	for _, owner := range owners {
		stmts := byOwner[owner]
		if createsQueues[owner] {
			stmts = append(stmts, "ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO "+
				grants[0].Role+" (so that the queues it creates later are covered)")
		}
		parts = append(parts, "run as "+owner+": "+strings.Join(stmts, "; "))
	}
	return strings.Join(parts, "; ")
}

// keepFailures records the failures of messages whose dead letters could
// not be written, and makes them visible again after the visibility
// timeout, as a retry does: they stay in the queue with each attempt's
// failure in their history, to be dead-lettered when they come back once
// their DLQ takes them. It returns the ids of the messages so kept. When
// their failures cannot be recorded either, they are left as they are,
// to come back once their claims lapse.
func (w *queueWorker) keepFailures(ctx context.Context, queue string, dead []store.DeadLetterItem, settle func()) []int64 {
	vt := w.c.settingsFor(w.name).VisibilityTimeout
	var items []store.RetryItem
	for _, d := range dead {
		if d.Failure != nil {
			items = append(items, store.RetryItem{MsgID: d.MsgID, Delay: vt, Failure: *d.Failure,
				ReadCount: d.ReadCount, EnqueuedAt: d.EnqueuedAt})
		}
	}
	if len(items) == 0 {
		return nil
	}
	settle()
	kept, err := w.c.store.RetryMany(ctx, queue, items)
	if err != nil {
		w.c.log.Warn("pgbus: could not record the failures of the messages left in the queue; they come back after their visibility timeout all the same",
			"queue", queue, "count", len(items), "err", err)
		return nil
	}
	return kept
}

// outcomesDenied tells whether err, from a write of outcomes of physical
// queue queue, is the database refusing it for want of a privilege (say,
// INSERT on the archive of a queue made after the grants). The writer
// keeps trying, as for any failed write: leaving the messages to come back
// would run jobs that succeeded again. The first refusal since outcomes
// were last written logs what to grant, in place of a warning every few
// seconds.
func (w *queueWorker) outcomesDenied(ctx context.Context, queue string, count int, err error) bool {
	if !store.IsPermissionDenied(err) {
		return false
	}
	if !w.outcomesRefused.CompareAndSwap(false, true) {
		w.c.log.Debug("pgbus: writing outcomes refused again for want of a privilege; retrying", "queue", queue, "count", count)
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	const what = "pgbus: this database role may not write the outcomes of the queue's jobs; pgbus keeps trying, and their messages stay where they are, " +
		"neither run again nor lost, while the queue's later outcomes wait behind them: "
	grants, gerr := w.c.store.OutcomeGrants(ctx, queue)
	advice := "grant the role SELECT, INSERT, UPDATE and DELETE on the queue's tables, its archive's and pgbus.failures, as the role that owns them"
	if gerr == nil && len(grants) > 0 {
		advice = grantAdvice(grants)
	}
	w.c.log.Error(what+advice, "queue", queue, "count", count, "err", err)
	return true
}

// outcomesWritten notes a write of outcomes that landed, saying so once
// when writes had been refused.
func (w *queueWorker) outcomesWritten() {
	if w.outcomesRefused.CompareAndSwap(true, false) {
		w.c.log.Info("pgbus: outcomes are written again: the role may write them now", "queue", w.name)
	}
}
