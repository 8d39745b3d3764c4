package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// ElectionRetention elects the one process that prunes at a time: the
// ASCII bytes of "pgbusret".
const ElectionRetention Election = 0x7067627573_726574

// RetentionTurn is a process's win of the retention election: while it is
// held, TryRetentionTurn in every other process (and RunRetention there)
// finds the election taken. It is a Lease: a transaction-scoped advisory
// lock, which ends with the transaction even when the connection goes back
// to a pooler in transaction mode (PgBouncer), on a connection of its own
// outside the pool, so that the pass it guards has the whole pool: held on
// one of the pool's connections, it left a pool of one nothing to prune
// with, and the process waited out its database call timeout, then took
// the wait for an outage.
type RetentionTurn struct {
	lease *Lease
}

// TryRetentionTurn takes the retention election if no other process holds
// it: it returns the turn, or nil when another process holds it. End the
// turn when done.
func (s *Store) TryRetentionTurn(ctx context.Context) (*RetentionTurn, error) {
	l, err := s.TryLead(ctx, ElectionRetention)
	if err != nil || l == nil {
		return nil, err
	}
	return &RetentionTurn{lease: l}, nil
}

// End gives the turn up: other processes may win the election again.
// Calling End again does nothing.
func (t *RetentionTurn) End(ctx context.Context) {
	if t != nil && t.lease != nil {
		t.lease.Release(ctx)
		t.lease = nil
	}
}

// RetentionReport says what one retention pass removed.
type RetentionReport struct {
	// Ran is false when another process held the retention election.
	Ran             bool             `json:"ran"`
	ArchivedDeleted map[string]int64 `json:"archived_deleted"`
	KeysDeleted     int64            `json:"idempotency_keys_deleted"`
	// FailuresDeleted counts failure history rows of queues that are gone
	// (see pruneGoneFailures).
	FailuresDeleted int64 `json:"failures_deleted"`
	// OrphanFailuresDeleted counts failure history rows of messages that
	// are gone from queues that are still there: deleted by another PGMQ
	// client (pgmq.delete, pgmq.archive's archive then pruned by it,
	// pgmq.purge_queue), which leaves pgbus's records of them (see
	// pruneOrphanFailures).
	OrphanFailuresDeleted int64 `json:"orphan_failures_deleted"`
	// IDFloorsDeleted counts notes of pgbus.queue_id_floors that say no
	// id was handed out (see pruneEmptyIDFloors).
	IDFloorsDeleted int64 `json:"id_floors_deleted"`
	// StatsDeleted and WorkersDeleted count per-minute counters older
	// than the pass's age for them (RetentionAges.Counters) and worker
	// rows older than StatsRetention.
	StatsDeleted   int64 `json:"stats_deleted"`
	WorkersDeleted int64 `json:"workers_deleted"`
	// BreakerUsersDeleted counts circuit breaker users no process has
	// said it has for StatsRetention.
	BreakerUsersDeleted int64 `json:"breaker_users_deleted"`
	// BreakersDeleted counts circuit breakers left without users that
	// have not changed for StatsRetention: a handler that stopped using
	// one (renamed, removed) does not keep it listed, or open, for ever.
	// A process that uses the name again makes it anew, closed.
	BreakersDeleted int64 `json:"breakers_deleted"`
	// DeadCountsFolded counts the pending deltas of DLQ group counts
	// folded into their base rows (see FoldDeadCounts).
	DeadCountsFolded int64 `json:"dead_counts_folded"`
	// AuditDeleted counts audit log entries older than the pass's audit
	// retention (see PruneAudit).
	AuditDeleted int64 `json:"audit_deleted"`
	// AuditKept is set when the pass's role may not delete audit entries
	// (the log is append-only to it, as an operator's grants may make it):
	// they stay until a pass by a role that may, the rest of the pass runs.
	AuditKept bool `json:"audit_kept,omitempty"`
	// QueuesKept are the queues whose archives (and idempotency keys) the
	// pass passed over, in name order: their old rows stay until a later
	// pass may prune them, while the pass prunes the other queues and the
	// rest.
	QueuesKept []QueueKept `json:"queues_kept,omitempty"`
	// StepsFailed are the steps of the pass that failed while the
	// database went on answering: a statement cut off by its bound
	// (WithStatementTimeout), or a refusal. The pass went on with its
	// other steps; a later pass tries them again, a batched one from where
	// it stopped, since its batches before the failure stay done.
	StepsFailed []RetentionStepFailure `json:"steps_failed,omitempty"`
}

// RetentionStepFailure is a step of a retention pass that failed while
// the database answered (RetentionReport.StepsFailed).
type RetentionStepFailure struct {
	// Step says what the step prunes: "counters", "worker rows", the
	// archive of a queue.
	Step string `json:"step"`
	// Err is why it failed: context.DeadlineExceeded for a statement
	// that ran past its bound, or the database's refusal.
	Err error `json:"-"`
}

// QueueKept is a queue a retention pass passed over, and why.
type QueueKept struct {
	// Queue is the physical queue: orders, orders_dlq, orders_p1.
	Queue string `json:"queue"`
	// Why is KeptDenied or KeptLocked.
	Why string `json:"why"`
	// Grants are, when Why is KeptDenied, what the pass's role lacks on the
	// tables a prune of the queue touches, as GRANT statements need them:
	// granted, it may prune them.
	Grants []MissingGrant `json:"grants,omitempty"`
	// HeldBy says, when Why is KeptLocked, who held the lock on the
	// queue's tables, as WriteBlockers words it; "" when not known (a row
	// lock, or a lock released meanwhile).
	HeldBy string `json:"held_by,omitempty"`
	// Err is the database's refusal.
	Err error `json:"-"`
}

// Why a retention pass passed over a queue (QueueKept.Why).
const (
	// KeptDenied: the pass's role may not delete the queue's old rows
	// (a queue made after its grants, without default privileges).
	KeptDenied = "permission_denied"
	// KeptLocked: another transaction held a lock on the queue's tables
	// past retentionLockWait (a CREATE INDEX, a LOCK TABLE, an ALTER
	// TABLE).
	KeptLocked = "locked"
)

// retentionLockWait bounds each lock wait of a prune of a queue: a lock
// another transaction holds on one archive, for as long as it likes, must
// neither hold up the other queues nor run a prune into its statement
// timeout, which the engine takes for a database that does not answer.
const retentionLockWait = time.Second

// pruneLockWait is retentionLockWait, or less under a statement timeout
// too short to wait that long and still answer within it.
func pruneLockWait(ctx context.Context) time.Duration {
	if d := statementTimeout(ctx); d > 0 {
		return min(retentionLockWait, d/2)
	}
	return retentionLockWait
}

// StatsRetention is how long the rows of stopped or vanished worker
// processes, and circuit breakers no process uses, are kept, and per-minute
// counters unless a pass is given an age of its own for them
// (RetentionAges.Counters).
const StatsRetention = 7 * 24 * time.Hour

// RetentionAges are how long a retention pass keeps what its process's
// settings choose the age of.
type RetentionAges struct {
	// Audit is how long audit log entries are kept; zero or less keeps
	// every entry.
	Audit time.Duration
	// Counters is how long per-minute counters (pgbus.stats_minute) are
	// kept: zero keeps them StatsRetention, less than zero keeps every
	// counter.
	Counters time.Duration
}

// statsPruneBatch is how many counters one statement of pruneStats
// deletes. A variable so that tests can lower it.
var statsPruneBatch = 50000

// pruneStats deletes, oldest first and in batches, the per-minute counters
// older than olderThan, and returns how many went. Each batch is a
// statement (and a transaction) of its own, bounded on its own, so that a
// backlog of millions (a year of counters, as before retention ran) goes
// over several batches, each well within a database call's bound, rather
// than in one statement that runs past it on every pass. Each batch picks
// its rows through the index on minute from the minute the last batch
// ended at (the entries of rows deleted before it stay in the index until
// vacuum), and deletes them by their ctid, checking their age again.
func (s *Store) pruneStats(ctx context.Context, olderThan time.Duration) (int64, error) {
	var total int64
	from := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		var picked, deleted int64
		if err := s.db.QueryRow(ctx, pruneStatsSQL, olderThan.Microseconds(), statsPruneBatch, from).Scan(&picked, &deleted, &from); err != nil {
			return total, fmt.Errorf("store: retention: prune counters: %w", err)
		}
		total += deleted
		if picked < int64(statsPruneBatch) {
			return total, nil
		}
	}
}

// pruneStatsSQL is one batch of pruneStats: $1 the age in microseconds,
// $2 the batch size, $3 the minute the last batch ended at (rows of that
// minute not yet deleted are picked again). It returns how many rows it
// picked, how many went, and where the next batch starts.
const pruneStatsSQL = `WITH pick AS MATERIALIZED (
		SELECT ctid, minute FROM pgbus.stats_minute
		WHERE minute < now() - $1 * interval '1 microsecond' AND minute >= $3
		ORDER BY minute LIMIT $2
	), d AS (
		DELETE FROM pgbus.stats_minute WHERE ctid = ANY(ARRAY(SELECT ctid FROM pick))
			AND minute < now() - $1 * interval '1 microsecond'
		RETURNING 1
	)
	SELECT (SELECT count(*) FROM pick), (SELECT count(*) FROM d),
		coalesce((SELECT max(minute) FROM pick), $3)`

// PruneArchived deletes, in batches, the rows of a queue's archive archived
// longer ago than olderThan, with their failure history. It returns how many
// rows went.
//
// Each batch is one statement in a transaction of its own, so that the rows
// it deletes stay locked only briefly. It picks the oldest rows left by the
// archive's index on archived_at, from the time where the last batch ended:
// walking the index from its start again would pass over the entries of
// every row deleted so far in the pass, which stay until vacuum and which a
// transaction held open elsewhere makes costly to pass (a row archived
// meanwhile by a transaction that began before where the walk is, and so
// stamped with an earlier time, waits for the next pass). It deletes them by
// their ctid (a TID scan, not a second lookup by msg_id), checking their age
// again: a partitioned archive's partitions share ctids, and a row of
// another partition with a picked row's ctid goes only if it is as old.
//
// Rows another transaction holds locked are skipped, left to a later pass;
// a lock on the table (or on a row it must wait for) held past
// retentionLockWait fails the batch with SQLSTATE 55P03, the rows of the
// batches before it gone.
func (s *Store) PruneArchived(ctx context.Context, queue string, olderThan time.Duration, batch int) (int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return 0, err
	}
	if olderThan < 0 || batch < 1 || batch > MaxBatch {
		return 0, invalidf("prune %q: age must be positive and batch 1 to %d", queue, MaxBatch)
	}
	sql := pruneArchivedSQL(queue)
	var total int64
	from := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		var picked, deleted int64
		err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			if err := setLockTimeout(ctx, tx, pruneLockWait(ctx)); err != nil {
				return err
			}
			return tx.QueryRow(ctx, sql, olderThan.Microseconds(), batch, queue, from).Scan(&picked, &deleted, &from)
		})
		if err != nil {
			return total, s.archiveErr(ctx, err, "prune the archive of", queue)
		}
		total += deleted
		if picked < int64(batch) {
			return total, nil
		}
	}
}

// pruneArchivedSQL is one batch of PruneArchived: $1 the age in
// microseconds, $2 the batch size, $3 the queue, $4 the archived_at the
// last batch ended at (rows of that time not yet deleted are picked
// again). It returns how many rows it picked, how many went, and where the
// next batch starts.
func pruneArchivedSQL(queue string) string {
	a := archiveTable(queue)
	return `WITH pick AS MATERIALIZED (
			SELECT ctid, archived_at FROM ` + a + `
			WHERE archived_at < now() - $1 * interval '1 microsecond' AND archived_at >= $4
			ORDER BY archived_at LIMIT $2
			FOR UPDATE SKIP LOCKED
		), d AS (
			DELETE FROM ` + a + ` WHERE ctid = ANY(ARRAY(SELECT ctid FROM pick))
				AND archived_at < now() - $1 * interval '1 microsecond'
			RETURNING msg_id
		), f AS (
			DELETE FROM pgbus.failures WHERE queue_name = $3 AND msg_id IN (SELECT msg_id FROM d)
		)
		SELECT (SELECT count(*) FROM pick), (SELECT count(*) FROM d),
			coalesce((SELECT max(archived_at) FROM pick), $4)`
}

// keysPruneBatch is how many idempotency keys one statement of a
// retention pass looks at, deleting those no send would honour any more.
// A variable so that tests can lower it.
var keysPruneBatch = 10000

// pruneKeys deletes the idempotency keys of physical queue queue that no
// send would honour any more, those older than its archive retention age
// whose message is neither live nor archived within age, and returns how
// many went. A key's age alone says nothing: a message sent with a long
// delay, or retried for long, stays live past any retention, and one
// archived after such a life is kept for age from then. Each key left is
// looked up by its message's id in both tables' primary keys, and is its
// message's only with its enqueued_at (keyInForceSQL).
//
// It looks at keysPruneBatch keys to a statement, each a transaction of
// its own whose lock waits are bounded as PruneArchived's, oldest first
// along the keys' index by queue and time, from the key where the last
// batch ended (by time, then key: the keys of a batch of sends share one
// time, and those in force stay, so a batch never starts at the same key
// twice). A backlog of millions so goes over many short statements, each
// well within a database call's bound, rather than one long transaction
// that, once it ran past that bound, failed on every pass.
func (s *Store) pruneKeys(ctx context.Context, queue string, age time.Duration) (int64, error) {
	sql := pruneKeysSQL(queue)
	var total int64
	var afterKey string
	after := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		var picked, deleted int64
		err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			if err := setLockTimeout(ctx, tx, pruneLockWait(ctx)); err != nil {
				return err
			}
			return tx.QueryRow(ctx, sql, queue, age.Microseconds(), keysPruneBatch, after, afterKey).
				Scan(&picked, &deleted, &after, &afterKey)
		})
		if err != nil {
			return total, s.archiveErr(ctx, err, "prune the idempotency keys of", queue)
		}
		total += deleted
		if picked < int64(keysPruneBatch) {
			return total, nil
		}
	}
}

// pruneKeysSQL is one batch of pruneKeys: $1 the queue, $2 the age in
// microseconds, $3 the batch size, $4 and $5 the time and key the last
// batch ended at. It returns how many keys it looked at, how many went,
// and where the next batch starts.
func pruneKeysSQL(queue string) string {
	return `WITH pick AS MATERIALIZED (
			SELECT ctid, created_at, key FROM pgbus.idempotency_keys
			WHERE queue_name = $1 AND created_at < now() - $2 * interval '1 microsecond'
			  AND created_at >= $4 AND (created_at > $4 OR key > $5)
			ORDER BY created_at, key LIMIT $3
		), d AS (
			DELETE FROM pgbus.idempotency_keys k WHERE k.ctid = ANY(ARRAY(SELECT ctid FROM pick))
			  AND k.queue_name = $1 AND k.created_at < now() - $2 * interval '1 microsecond'
			  AND NOT EXISTS (SELECT 1 FROM ` + queueTable(queue) + ` q WHERE q.msg_id = k.msg_id AND q.enqueued_at = k.created_at)
			  AND NOT EXISTS (SELECT 1 FROM ` + archiveTable(queue) + ` a WHERE a.msg_id = k.msg_id AND a.enqueued_at = k.created_at
			                  AND a.archived_at > now() - $2 * interval '1 microsecond')
			RETURNING 1
		), last AS (
			SELECT created_at, key FROM pick ORDER BY created_at DESC, key DESC LIMIT 1
		)
		SELECT (SELECT count(*) FROM pick), (SELECT count(*) FROM d),
			coalesce((SELECT created_at FROM last), $4), coalesce((SELECT key FROM last), $5)`
}

// pruneGoneKeys deletes the idempotency keys older than age of the queues
// that are not among listed, those whose tables are gone (dropped outside
// pgbus, which leaves them), with no message left to keep them, and
// returns how many went. It deletes keysPruneBatch keys to a statement, as
// pruneKeys does, oldest first from where the last batch ended.
func (s *Store) pruneGoneKeys(ctx context.Context, age time.Duration, listed []string) (int64, error) {
	var total int64
	var afterQueue, afterKey string
	after := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		var picked, deleted int64
		if err := s.db.QueryRow(ctx, pruneGoneKeysSQL, age.Microseconds(), listed, keysPruneBatch, after, afterQueue, afterKey).
			Scan(&picked, &deleted, &after, &afterQueue, &afterKey); err != nil {
			return total, fmt.Errorf("store: retention: prune idempotency keys: %w", err)
		}
		total += deleted
		if picked < int64(keysPruneBatch) {
			return total, nil
		}
	}
}

// pruneGoneKeysSQL is one batch of pruneGoneKeys: $1 the age in
// microseconds, $2 the queues listed, $3 the batch size, $4, $5 and $6 the
// time, queue and key the last batch ended at. It returns how many keys it
// looked at, how many went, and where the next batch starts.
const pruneGoneKeysSQL = `WITH pick AS MATERIALIZED (
		SELECT ctid, created_at, queue_name, key FROM pgbus.idempotency_keys
		WHERE created_at < now() - $1 * interval '1 microsecond' AND queue_name <> ALL($2)
		  AND created_at >= $4 AND (created_at > $4 OR (queue_name, key) > ($5, $6))
		ORDER BY created_at, queue_name, key LIMIT $3
	), d AS (
		DELETE FROM pgbus.idempotency_keys WHERE ctid = ANY(ARRAY(SELECT ctid FROM pick))
		  AND created_at < now() - $1 * interval '1 microsecond' AND queue_name <> ALL($2)
		RETURNING 1
	), last AS (
		SELECT created_at, queue_name, key FROM pick ORDER BY created_at DESC, queue_name DESC, key DESC LIMIT 1
	)
	SELECT (SELECT count(*) FROM pick), (SELECT count(*) FROM d), coalesce((SELECT created_at FROM last), $4),
		coalesce((SELECT queue_name FROM last), $5), coalesce((SELECT key FROM last), $6)`

// RunRetention prunes the archive of every queue pgbus manages
// (ManagedQueues: not that of a queue another PGMQ client made, which no
// pgbus worker serves) after its archive retention and that of every DLQ of one after its
// queue's dead retention, each queue's idempotency keys that are no longer
// in force (pruneKeys) and the failure history of its messages that are
// gone (pruneOrphanFailures), then the keys
// of queues that are gone once older than the longest retention and the
// failure history of queues that are gone (pruneGoneFailures), audit
// log entries older than auditAge (none when auditAge is 0 or less: the
// log is kept whole), and counters and worker rows older than
// StatsRetention, and folds the DLQ group counts' pending deltas
// (FoldDeadCounts). Only the archives that hold a row past retention
// are pruned, found first a hundred to a statement (archivesWithOldRows),
// as only the queues with a key past it have their keys pruned
// (queuesWithOldKeys). A queue its role may not prune, or whose tables
// another transaction holds locked past retentionLockWait, is passed over
// and listed in QueuesKept. A step that fails while the database answers
// (a statement past its bound, a refusal) is listed in StepsFailed, and the
// pass goes on with the others; it returns an error only when it cannot go
// on: the database does not answer, or ctx is done. One process at a time
// does it: the others find the lock taken and return with Ran false.
func (s *Store) RunRetention(ctx context.Context, batch int, auditAge time.Duration) (RetentionReport, error) {
	return s.RunRetentionAges(ctx, batch, RetentionAges{Audit: auditAge})
}

// RunRetentionAges is RunRetention with the ages of ages: the audit log's,
// and the per-minute counters' in place of StatsRetention.
func (s *Store) RunRetentionAges(ctx context.Context, batch int, ages RetentionAges) (RetentionReport, error) {
	auditAge := ages.Audit
	statsAge := ages.Counters
	if statsAge == 0 {
		statsAge = StatsRetention
	}
	rep := RetentionReport{ArchivedDeleted: map[string]int64{}}
	turn, err := s.TryRetentionTurn(ctx)
	if err != nil || turn == nil {
		return rep, err
	}
	rep.Ran = true
	// End on a fresh context so a cancelled caller still gives the turn up.
	defer turn.End(context.WithoutCancel(ctx))
	queues, err := s.ListQueues(ctx)
	if err != nil {
		return rep, err
	}
	settings, err := s.AllQueueSettings(ctx)
	if err != nil {
		return rep, err
	}
	managed, err := s.ManagedQueues(ctx)
	if err != nil {
		return rep, err
	}
	levels := managed.levels
	keyed := s.queuesWithOldKeys(ctx, queues, settings, levels)
	failed := s.queuesWithFailures(ctx)
	aged := s.archivesWithOldRows(ctx, queues, settings, managed)
	longest := DefaultArchiveRetention
	listed := make([]string, 0, len(queues))
	for _, q := range queues {
		listed = append(listed, q.Name)
		if ValidatePhysicalName(q.Name) != nil {
			continue
		}
		age := retentionOf(q.Name, settings, levels)
		longest = max(longest, age)
		var n int64
		var err error
		if managed.Manages(q.Name) && aged[q.Name] {
			n, err = s.PruneArchived(ctx, q.Name, age, batch)
		}
		if n > 0 {
			rep.ArchivedDeleted[q.Name] = n
		}
		if err == nil && (keyed == nil || keyed[q.Name]) {
			// The keys are pgbus's own rows, whoever made the queue.
			var keys int64
			keys, err = s.pruneKeys(ctx, q.Name, age)
			rep.KeysDeleted += keys
		}
		if err == nil && (failed == nil || failed[q.Name]) {
			// So is the failure history.
			var orphans int64
			orphans, err = s.pruneOrphanFailures(ctx, q.Name, batch)
			rep.OrphanFailuresDeleted += orphans
		}
		if errors.Is(err, ErrNotFound) {
			continue // dropped since it was listed: nothing left to prune
		}
		if err != nil {
			// One queue the pass may not prune keeps its rows; the others,
			// and the rest of the pass, are pruned all the same.
			kept, err := s.keptQueue(ctx, q.Name, err)
			if err = s.stepFailed(ctx, &rep, "the archive of "+q.Name, err); err != nil {
				return rep, err
			}
			if kept.Queue != "" {
				rep.QueuesKept = append(rep.QueuesKept, kept)
			}
		}
	}
	// The steps below are independent: one that fails while the database
	// answers (a statement past its bound, a refusal) is recorded in
	// StepsFailed and the pass goes on with the next; one that fails
	// because the database does not answer ends the pass.
	//
	// The keys of queues whose tables are gone (dropped outside pgbus,
	// which leaves them) have no message left to keep them.
	gone, err := s.pruneGoneKeys(ctx, longest, listed)
	rep.KeysDeleted += gone
	if err = s.stepFailed(ctx, &rep, "idempotency keys of dropped queues", err); err != nil {
		return rep, err
	}
	rep.FailuresDeleted, err = s.pruneGoneFailures(ctx, batch)
	if err = s.stepFailed(ctx, &rep, "failure history of dropped queues", err); err != nil {
		return rep, err
	}
	rep.IDFloorsDeleted, err = s.pruneEmptyIDFloors(ctx)
	if err = s.stepFailed(ctx, &rep, "notes of dropped queues' ids", err); err != nil {
		return rep, err
	}
	if auditAge > 0 {
		rep.AuditDeleted, err = s.PruneAudit(ctx, auditAge)
		if IsPermissionDenied(err) {
			rep.AuditKept, err = true, nil
		}
		if err = s.stepFailed(ctx, &rep, "audit entries", err); err != nil {
			return rep, err
		}
	}
	if statsAge > 0 {
		rep.StatsDeleted, err = s.pruneStats(ctx, statsAge)
		if err = s.stepFailed(ctx, &rep, "counters", err); err != nil {
			return rep, err
		}
	}
	rep.WorkersDeleted, err = s.PruneWorkers(ctx, StatsRetention)
	if err = s.stepFailed(ctx, &rep, "worker rows", err); err != nil {
		return rep, err
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM pgbus.circuit_breaker_users WHERE seen_at < now() - $1 * interval '1 microsecond'`, StatsRetention.Microseconds())
	rep.BreakerUsersDeleted = tag.RowsAffected()
	if err = s.stepFailed(ctx, &rep, "circuit breaker users", err); err != nil {
		return rep, fmt.Errorf("store: retention: prune circuit breaker users: %w", err)
	}
	tag, err = s.db.Exec(ctx, `DELETE FROM pgbus.circuit_breakers b
		WHERE b.updated_at < now() - $1 * interval '1 microsecond'
		  AND (b.last_success_at IS NULL OR b.last_success_at < now() - $1 * interval '1 microsecond')
		  AND NOT EXISTS (SELECT 1 FROM pgbus.circuit_breaker_users u WHERE u.breaker = b.name)`, StatsRetention.Microseconds())
	rep.BreakersDeleted = tag.RowsAffected()
	if err = s.stepFailed(ctx, &rep, "circuit breakers without users", err); err != nil {
		return rep, fmt.Errorf("store: retention: prune circuit breakers without users: %w", err)
	}
	rep.DeadCountsFolded, err = s.FoldDeadCounts(ctx)
	return rep, s.stepFailed(ctx, &rep, "DLQ group counts", err)
}

// queuesWithOldKeys returns, of queues, those with an idempotency key
// older than their archive retention, which pruneKeys may delete, read
// in one statement through the keys' index by queue and time: the others
// need no transaction of their own, which a pass over a fleet of
// thousands of PGMQ tables, most with no key, made for each. nil, when
// the read fails, has pruneKeys look at every queue, as before.
func (s *Store) queuesWithOldKeys(ctx context.Context, queues []QueueInfo, settings map[string]QueueSettings, levels map[string]int) map[string]bool {
	names := make([]string, 0, len(queues))
	ages := make([]int64, 0, len(queues))
	for _, q := range queues {
		if ValidatePhysicalName(q.Name) != nil {
			continue
		}
		names = append(names, q.Name)
		ages = append(ages, retentionOf(q.Name, settings, levels).Microseconds())
	}
	rows, err := s.db.Query(ctx, `SELECT u.q FROM unnest($1::text[], $2::bigint[]) AS u(q, age)
		WHERE EXISTS (SELECT 1 FROM pgbus.idempotency_keys k
		              WHERE k.queue_name = u.q AND k.created_at < now() - u.age * interval '1 microsecond')`, names, ages)
	if err != nil {
		return nil
	}
	keyed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil
	}
	out := make(map[string]bool, len(keyed))
	for _, q := range keyed {
		out[q] = true
	}
	return out
}

// archiveFindBatch is how many archives one statement of
// archivesWithOldRows looks into: a statement locks each table it reads,
// and the table's indexes, until it ends. A variable so that tests can
// lower it.
var archiveFindBatch = 100

// archivesWithOldRows returns, of the queues pgbus manages, those whose
// archive holds a row archived longer ago than their retention, which
// PruneArchived may delete: one statement per archiveFindBatch archives
// asks each archive's index on archived_at for its oldest entry, where a
// pass over a fleet of hundreds of queues, their DLQs and levels ran a
// transaction of its own for each, most with nothing to delete. A
// statement that fails (a table locked past retentionLockWait, one its
// role may not read, one dropped meanwhile) returns all of its queues, so
// that PruneArchived tries each and the pass reports the one it cannot
// prune, as before.
func (s *Store) archivesWithOldRows(ctx context.Context, queues []QueueInfo, settings map[string]QueueSettings, managed ManagedQueues) map[string]bool {
	var names []string
	var ages []int64
	for _, q := range queues {
		if ValidatePhysicalName(q.Name) != nil || !managed.Manages(q.Name) {
			continue
		}
		names = append(names, q.Name)
		ages = append(ages, retentionOf(q.Name, settings, managed.levels).Microseconds())
	}
	out := make(map[string]bool)
	for start := 0; start < len(names); start += archiveFindBatch {
		chunk := names[start:min(start+archiveFindBatch, len(names))]
		found, err := s.findOldArchiveRows(ctx, chunk, ages[start:start+len(chunk)])
		if err != nil {
			found = chunk
		}
		for _, q := range found {
			out[q] = true
		}
	}
	return out
}

// findOldArchiveRows returns, of the physical queues names, those whose
// archive holds a row archived longer ago than the age of the same index
// in ages (microseconds), in one statement whose lock waits are bounded
// as PruneArchived's. Its text changes with the queues, so it is not
// prepared: it would crowd the statements workers run out of each
// connection's cache.
func (s *Store) findOldArchiveRows(ctx context.Context, names []string, ages []int64) ([]string, error) {
	var sql strings.Builder
	for i, q := range names {
		if i > 0 {
			sql.WriteString("\nUNION ALL\n")
		}
		fmt.Fprintf(&sql, `SELECT %d WHERE EXISTS (SELECT FROM %s WHERE archived_at < now() - %d * interval '1 microsecond')`,
			i, archiveTable(q), ages[i])
	}
	var found []string
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, pruneLockWait(ctx)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sql.String(), pgx.QueryExecModeExec)
		if err != nil {
			return err
		}
		found = found[:0]
		var i int
		_, err = pgx.ForEachRow(rows, []any{&i}, func() error {
			if i < 0 || i >= len(names) {
				return fmt.Errorf("unexpected row %d", i)
			}
			found = append(found, names[i])
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: retention: find the archives with rows to prune: %w", err)
	}
	return found, nil
}

// stepFailed records in rep the failure err of step of a retention pass
// and returns nil, so that the pass goes on, when the database still
// answers (a statement that ran past its bound on a large backlog, a
// refusal of one table); it returns err, which ends the pass, when the
// database does not answer (a check of it gets no answer either) or the
// pass's caller gave up. A nil err is no failure.
func (s *Store) stepFailed(ctx context.Context, rep *RetentionReport, step string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || IsUnreachable(err) || !s.answers(ctx) {
		return err
	}
	rep.StepsFailed = append(rep.StepsFailed, RetentionStepFailure{Step: step, Err: err})
	return nil
}

// answers reports whether the database answers a statement within the
// bound of ctx's statements.
func (s *Store) answers(ctx context.Context) bool {
	_, err := s.db.Exec(ctx, `SELECT 1`)
	return err == nil
}

// keptQueue is physical queue queue passed over by a retention pass whose
// prune of it failed with err, or err when the pass cannot go on past it.
func (s *Store) keptQueue(ctx context.Context, queue string, err error) (QueueKept, error) {
	if isLockTimeout(err) {
		kept := QueueKept{Queue: queue, Why: KeptLocked, Err: err}
		// Who holds it helps, but is no reason to stop the pass.
		kept.HeldBy, _, _ = s.lockHolders(ctx, fmt.Sprintf("find the locks that hold the prune of %q", queue), pruneLockWait(ctx),
			`l.relation IN (SELECT to_regclass(t) FROM unnest($2::text[]) AS t)`,
			[]string{archiveTable(queue), queueTable(queue), "pgbus.failures", "pgbus.idempotency_keys"})
		return kept, nil
	}
	if !IsPermissionDenied(err) {
		return QueueKept{}, err
	}
	kept := QueueKept{Queue: queue, Why: KeptDenied, Err: err}
	// Without the list, the refusal itself still says which table.
	kept.Grants, _ = s.missingGrants(ctx, fmt.Sprintf("prune %q", queue),
		archiveTable(queue), queueTable(queue), "pgbus.failures", "pgbus.idempotency_keys")
	return kept, nil
}

// queuesWithFailures returns the queues pgbus.failures holds history of,
// found by a walk of the history's index, a lookup per name, not a scan
// of every failure: the others need no prune of their history's orphans
// (pruneOrphanFailures). nil, when the read fails, has the pass look at
// every queue.
func (s *Store) queuesWithFailures(ctx context.Context) map[string]bool {
	rows, err := s.db.Query(ctx, failureQueuesSQL)
	if err != nil {
		return nil
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil
	}
	out := make(map[string]bool, len(names))
	for _, q := range names {
		out[q] = true
	}
	return out
}

// failureQueuesSQL lists the distinct queue names of pgbus.failures, each
// found by one lookup in the history's index on (queue_name, msg_id,
// attempt).
const failureQueuesSQL = `WITH RECURSIVE names AS (
		SELECT min(queue_name) AS name FROM pgbus.failures
		UNION ALL
		SELECT (SELECT min(queue_name) FROM pgbus.failures WHERE queue_name > names.name)
		FROM names WHERE names.name IS NOT NULL
	)
	SELECT name FROM names WHERE name IS NOT NULL`

// pruneOrphanFailures deletes the failure history of the messages of
// physical queue queue that are in neither its table nor its archive, and
// returns how many rows went. pgbus deletes a message's history with it
// (delete on success, a prune or purge of an archive, a purge of the
// queue), and moves it with the message into its DLQ and back (the rows
// name the queue the message is in and its id there); another PGMQ
// client's pgmq.delete or pgmq.purge_queue, or a prune of its own
// archive, leaves it, with no message to belong to and nothing else that
// would delete it. A queue whose archive table is missing is left alone:
// its messages' archived history cannot be told from the orphans.
//
// It looks at batch messages to a statement, each a transaction of its
// own whose lock waits are bounded as PruneArchived's, in msg_id order
// along the history's index from the message where the last batch ended,
// and deletes the history of those its queue and archive do not hold, as
// the statement's snapshot sees them: every pgbus statement that moves a
// message moves its history in the same transaction, so a message that
// moved (archived, dead-lettered, retried) is seen where it is with its
// history, and a row moved meanwhile to another message is a new row
// version, which the delete, checking its queue and id again, leaves.
func (s *Store) pruneOrphanFailures(ctx context.Context, queue string, batch int) (int64, error) {
	var archive bool
	if err := s.db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, archiveTable(queue)).Scan(&archive); err != nil {
		return 0, fmt.Errorf("store: retention: prune the failure history of deleted messages of %q: %w", queue, err)
	}
	if !archive {
		return 0, nil
	}
	sql := pruneOrphanFailuresSQL(queue)
	var total int64
	after := int64(math.MinInt64)
	for {
		var picked, deleted int64
		err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			if err := setLockTimeout(ctx, tx, pruneLockWait(ctx)); err != nil {
				return err
			}
			return tx.QueryRow(ctx, sql, queue, batch, after).Scan(&picked, &deleted, &after)
		})
		if err != nil {
			return total, s.archiveErr(ctx, err, "prune the failure history of deleted messages of", queue)
		}
		total += deleted
		if picked < int64(batch) {
			return total, nil
		}
	}
}

// pruneOrphanFailuresSQL is one batch of pruneOrphanFailures: $1 the
// queue, $2 the batch size (messages), $3 the msg_id the last batch ended
// at. It returns how many messages it looked at, how many failure rows
// went, and where the next batch starts.
func pruneOrphanFailuresSQL(queue string) string {
	return `WITH ids AS MATERIALIZED (
			SELECT DISTINCT msg_id FROM pgbus.failures
			WHERE queue_name = $1 AND msg_id > $3
			ORDER BY msg_id LIMIT $2
		), gone AS MATERIALIZED (
			SELECT i.msg_id FROM ids i
			WHERE NOT EXISTS (SELECT 1 FROM ` + queueTable(queue) + ` q WHERE q.msg_id = i.msg_id)
			  AND NOT EXISTS (SELECT 1 FROM ` + archiveTable(queue) + ` a WHERE a.msg_id = i.msg_id)
		), d AS (
			DELETE FROM pgbus.failures f WHERE f.queue_name = $1 AND f.msg_id = ANY(ARRAY(SELECT msg_id FROM gone))
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM ids), (SELECT count(*) FROM d), coalesce((SELECT max(msg_id) FROM ids), $3)`
}

// pruneEmptyIDFloors deletes the notes of pgbus.queue_id_floors that say
// a dropped queue handed out no id, which drops before noteLastID left
// them out wrote, one for every DLQ that never held a message: a queue
// made again under the name starts at 1 with them or without. It returns
// how many went.
//
// The other notes stay, those of names made again included, whose id
// sequences start after them (startIDsAfter): a queue made again whose
// tables another client drops (pgmq.drop_queue) takes its sequence with
// it, and the note is then what keeps a queue made again by pgbus after
// the first queue's ids. They grow with the names dropped, one each.
func (s *Store) pruneEmptyIDFloors(ctx context.Context) (int64, error) {
	// Looked for first, so that a role that may not delete them is told
	// only once there are some.
	var some bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgbus.queue_id_floors WHERE last_id <= 0)`).Scan(&some)
	if err != nil || !some {
		if err != nil {
			return 0, fmt.Errorf("store: retention: find the notes of dropped queues' ids that say none: %w", err)
		}
		return 0, nil
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM pgbus.queue_id_floors WHERE last_id <= 0`)
	if err != nil {
		return 0, fmt.Errorf("store: retention: prune the notes of dropped queues' ids: %w", err)
	}
	return tag.RowsAffected(), nil
}

// pruneGoneFailures deletes, batch rows at a time, the failure history of
// queues that pgmq.meta no longer lists: dropped outside pgbus (PGMQ's
// drop_queue), which leaves it behind with no message to belong to. The
// names are found by a walk of the history's index, a lookup per name,
// not a scan of every failure; each delete checks again that the queue is
// still gone, so a queue created meanwhile keeps its history.
func (s *Store) pruneGoneFailures(ctx context.Context, batch int) (int64, error) {
	rows, err := s.db.Query(ctx, `WITH RECURSIVE names AS (
			SELECT min(queue_name) AS name FROM pgbus.failures
			UNION ALL
			SELECT (SELECT min(queue_name) FROM pgbus.failures WHERE queue_name > names.name)
			FROM names WHERE names.name IS NOT NULL
		)
		SELECT name FROM names
		WHERE name IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pgmq.meta m WHERE m.queue_name = names.name)`)
	if err != nil {
		return 0, fmt.Errorf("store: retention: find the failure history of dropped queues: %w", err)
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("store: retention: find the failure history of dropped queues: %w", err)
	}
	var total int64
	for _, name := range gone {
		n, err := s.pruneFailuresOf(ctx, name, batch)
		total += n
		if err != nil {
			return total, fmt.Errorf("store: retention: prune the failure history of dropped queue %q: %w", name, err)
		}
	}
	return total, nil
}

// pruneFailuresOf deletes the failure history of dropped queue name, batch
// rows to a statement, and returns how many rows went. It stops at the
// first batch that deletes fewer rows than batch: none left, or the queue
// made again meanwhile.
//
// Each batch picks its rows along the history's index on (queue_name,
// msg_id, attempt) from the message and attempt where the last batch
// ended: walking the queue's entries from their start again would pass
// over the entries of every row deleted so far, which stay until vacuum
// and which a transaction held open elsewhere makes costly to pass. Rows
// of that very message and attempt are picked again, so that ties across
// batches all go. It deletes them by their ctid (a TID scan, not a second
// lookup by id), checking their queue again: a row moved to another queue
// meanwhile is a new row version, which stays.
func (s *Store) pruneFailuresOf(ctx context.Context, name string, batch int) (int64, error) {
	var total int64
	msgID, attempt := int64(math.MinInt64), int32(math.MinInt32)
	for {
		var n int64
		if err := s.db.QueryRow(ctx, pruneFailuresSQL, name, batch, msgID, attempt).
			Scan(&n, &msgID, &attempt); err != nil {
			return total, err
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}

// pruneFailuresSQL is one batch of pruneFailuresOf: $1 the queue, $2 the
// batch size, $3 and $4 the msg_id and attempt the last batch ended at. It
// returns how many rows went and where the next batch starts.
const pruneFailuresSQL = `WITH pick AS MATERIALIZED (
		SELECT ctid, msg_id, attempt FROM pgbus.failures
		WHERE queue_name = $1 AND (msg_id, attempt) >= ($3::bigint, $4::int)
		ORDER BY msg_id, attempt LIMIT $2
	), d AS (
		DELETE FROM pgbus.failures WHERE ctid = ANY(ARRAY(SELECT ctid FROM pick)) AND queue_name = $1
			AND NOT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1)
		RETURNING 1
	), last AS (
		SELECT msg_id, attempt FROM pick ORDER BY msg_id DESC, attempt DESC LIMIT 1
	)
	SELECT (SELECT count(*) FROM d), coalesce((SELECT msg_id FROM last), $3), coalesce((SELECT attempt FROM last), $4)`

// retentionOf is how long a physical queue's archive is kept: the dead
// retention for a DLQ, the archive retention otherwise, from the settings of
// its logical queue (levels maps a priority level to it).
func retentionOf(physical string, settings map[string]QueueSettings, levels map[string]int) time.Duration {
	base, isDLQ := strings.CutSuffix(physical, DLQSuffix)
	if !isDLQ {
		base = logicalOf(base, levels)
	}
	set, ok := settings[base]
	if !ok {
		set = DefaultQueueSettings(base)
	}
	if isDLQ {
		return set.DeadRetention
	}
	return set.ArchiveRetention
}
