package engine

import (
	"context"
	"strings"

	"github.com/pgbus/pgbus/store"
)

// logQueuesKept says, once per pass, which queues retention passed over
// and what would let it prune them: each pass meets the same refusal, or
// the same lock, until someone acts, and a line a pass is what shows it
// lasts.
func (c *Client) logQueuesKept(kept []store.QueueKept) {
	var denied, locked, heldBy []string
	var grants []store.MissingGrant
	seen := map[string]bool{}
	var refusal, lockErr error
	for _, k := range kept {
		switch k.Why {
		case store.KeptDenied:
			denied = append(denied, k.Queue)
			refusal = k.Err
			for _, g := range k.Grants {
				if !seen[g.Table] {
					seen[g.Table] = true
					grants = append(grants, g)
				}
			}
		case store.KeptLocked:
			locked = append(locked, k.Queue)
			lockErr = k.Err
			if k.HeldBy != "" {
				heldBy = append(heldBy, k.HeldBy)
			}
		}
	}
	if len(denied) > 0 {
		advice := "grant the role SELECT, INSERT, UPDATE and DELETE on the queues' tables and archives, as the role that owns them " +
			"(ALTER DEFAULT PRIVILEGES, run as the role that creates queues, covers the queues created later)"
		if len(grants) > 0 {
			advice = grantAdvice(grants)
		}
		c.log.Warn("pgbus: retention passed over queues whose old archived messages and idempotency keys this database role may not delete; "+
			"they stay until it may, while the other queues are pruned: "+advice,
			"queues", denied, "role", c.store.User(), "err", refusal)
	}
	if len(locked) > 0 {
		// The database answers: a lock is no outage, and the queues wait
		// for a later pass, not for the lock.
		attrs := []any{"queues", locked, "err", lockErr}
		if len(heldBy) > 0 {
			attrs = append(attrs, "held_by", strings.Join(heldBy, "; "))
		}
		c.log.Warn("pgbus: retention passed over queues whose tables another transaction holds locked; "+
			"a later pass prunes them once the lock is released, while the other queues are pruned", attrs...)
	}
}

// logPruned says in one line what a retention pass deleted, each count
// that is not zero, and nothing when it deleted nothing: every pass runs
// every 10 minutes, and most delete nothing. Folding the DLQ group counts'
// deltas is bookkeeping, no deletion: it is told only beside one.
func (c *Client) logPruned(rep store.RetentionReport) {
	var attrs []any
	count := func(key string, n int64) {
		if n > 0 {
			attrs = append(attrs, key, n)
		}
	}
	if len(rep.ArchivedDeleted) > 0 {
		attrs = append(attrs, "archived_messages", rep.ArchivedDeleted)
	}
	count("idempotency_keys", rep.KeysDeleted)
	count("failures_of_dropped_queues", rep.FailuresDeleted)
	count("failures_of_deleted_messages", rep.OrphanFailuresDeleted)
	count("id_floors", rep.IDFloorsDeleted)
	if rep.AuditDeleted > 0 {
		attrs = append(attrs, "audit_entries", rep.AuditDeleted, "audit_older_than", c.cfg.AuditRetention)
	}
	if rep.StatsDeleted > 0 {
		attrs = append(attrs, "counters", rep.StatsDeleted, "counters_older_than", c.cfg.StatsRetention)
	}
	count("workers", rep.WorkersDeleted)
	count("breaker_users", rep.BreakerUsersDeleted)
	count("breakers", rep.BreakersDeleted)
	if len(attrs) == 0 {
		return
	}
	count("dead_counts_folded", rep.DeadCountsFolded)
	c.log.Info("pgbus: retention pruned old rows", attrs...)
}

// logStepsFailed says which steps of a retention pass failed while the
// database answered (the pass went on with the others): a step cut off by
// the database call timeout is a step too long for it, as a first prune
// of a large backlog, not a database that does not answer, and is no
// outage; a refusal that says the database cannot serve (read-only, full,
// crowded) is one, told as the other calls tell it.
//
// A step given up while it waited for a connection of the pool, every one
// of which other calls held, is said as that wait (poolWait).
func (c *Client) logStepsFailed(ctx context.Context, failed []store.RetentionStepFailure) {
	for _, f := range failed {
		if unanswered(f.Err) {
			if waited := c.poolWait(ctx, c.cfg.DatabaseCallTimeout, f.Err); waited != nil {
				c.outage.failed(waited)
				continue
			}
			c.log.Warn("pgbus: a retention step ran past the database call timeout and was cut off; the database answers, so this is no outage: "+
				"the pass went on with its other steps, and the next pass tries this one again, going on from the batches this one finished",
				"step", f.Step, "timeout", c.cfg.DatabaseCallTimeout, "err", f.Err)
			continue
		}
		if c.outage.failed(f.Err) {
			continue
		}
		c.log.Warn(c.advised("pgbus: a retention step failed; the pass went on with its other steps, and the next pass tries this one again", f.Err),
			"step", f.Step, "err", f.Err)
	}
}
