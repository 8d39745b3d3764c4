package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A queue dropped and made again outside pgbus (pgmq.drop_queue, then
// pgmq.create) starts its message ids over, while what pgbus keeps about
// the old queue's messages, keyed by queue name and message id (their
// failure history, their idempotency keys) and by queue name alone (the
// per-minute counters), stays: the new queue's messages of the same ids
// would show another message's failures, and its counters the old
// queue's outcomes. pgbus.queue_incarnations records, for each physical
// queue, the pgmq.meta.created_at of the queue that state belongs to; a
// queue whose created_at is another (or that has none recorded) was made
// since, and SettleIncarnations forgets the state that came before it.
//
// What came before is told by time: a failure recorded before the queue
// was made, an idempotency key older than it whose message is not there,
// a counter of a minute before it. A failure moved into the queue with its
// message (a DLQ retry into the queue, a dead letter into a DLQ) keeps the
// time it was recorded at, which may come before: the moves out of a
// queue not yet settled leave such failures behind (deadLetterSQL,
// deadRetrySQL), and a retry settles the queues it moves between first
// (RetryDead), so that what it brings is not taken for what came before.

// IncarnationReport says what SettleIncarnations found and forgot.
type IncarnationReport struct {
	// Queues are the physical queues found made again since pgbus last
	// looked, in name order: those with another incarnation recorded.
	Queues []string
	// Failures, Keys and Counters count the failure history rows,
	// idempotency keys and per-minute counters of the queues before them
	// that went.
	Failures, Keys, Counters int64
}

// SettleIncarnations forgets, for each physical queue of names made again
// since pgbus last looked (its pgmq.meta.created_at is not the one
// recorded), the state pgbus kept about the queue before it: the failure
// history recorded before it was made, the idempotency keys older than it
// whose messages are not there, and, for a work queue, the per-minute
// counters of its queue before the minute it was made in (those of that
// minute stay, the new queue's among them). It then records the queue as
// it is. A name of no queue is passed over. Each queue is settled in a
// transaction of its own, one at a time across processes.
func (s *Store) SettleIncarnations(ctx context.Context, names []string) (IncarnationReport, error) {
	var rep IncarnationReport
	valid := make([]string, 0, len(names))
	for _, n := range names {
		if ValidatePhysicalName(n) == nil {
			valid = append(valid, n)
		}
	}
	if len(valid) == 0 {
		return rep, nil
	}
	rows, err := s.db.Query(ctx, `SELECT m.queue_name::text FROM pgmq.meta m
		LEFT JOIN pgbus.queue_incarnations i ON i.queue_name = m.queue_name::text
		WHERE m.queue_name::text = ANY($1::text[]) AND i.created_at IS DISTINCT FROM m.created_at`, valid)
	if err != nil {
		return rep, fmt.Errorf("store: find the queues made again: %w", err)
	}
	made, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return rep, fmt.Errorf("store: find the queues made again: %w", err)
	}
	slices.Sort(made)
	for _, q := range made {
		var r settledQueue
		err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) (err error) {
			r, err = settleIncarnation(ctx, tx, q)
			return err
		})
		if err != nil {
			return rep, s.archiveErr(ctx, err, "forget what came before the queue made again", q)
		}
		if r.again {
			rep.Queues = append(rep.Queues, q)
		}
		rep.Failures, rep.Keys, rep.Counters = rep.Failures+r.failures, rep.Keys+r.keys, rep.Counters+r.counters
	}
	return rep, nil
}

// settledQueue is what settleIncarnation did.
type settledQueue struct {
	// again is set when the queue had another incarnation recorded; a
	// queue none was recorded for (made since pgbus last looked, by pgbus
	// or another PGMQ client) is settled all the same, and again is not
	// set.
	again                    bool
	failures, keys, counters int64
}

// settleIncarnation settles physical queue queue in tx, under a lock of
// its own: another settle of it waits, and then finds it settled.
func settleIncarnation(ctx context.Context, tx pgx.Tx, queue string) (settledQueue, error) {
	var r settledQueue
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('pgbus.incarnation:' || $1))`, queue); err != nil {
		return r, err
	}
	// Counters are kept by the queue workers work: a priority level's are
	// its queue's; a DLQ has none.
	logical := "NULL::text"
	if base, level, ok := splitLevel(queue); ok {
		logical = fmt.Sprintf(`(SELECT queue_name FROM pgbus.queues WHERE queue_name = %s AND priorities > %d)`, sqlText(base), level)
	}
	counted := "NULL::text"
	if !strings.HasSuffix(queue, DLQSuffix) {
		counted = fmt.Sprintf(`coalesce(%s, %s)`, logical, sqlText(queue))
	}
	err := tx.QueryRow(ctx, `WITH made AS MATERIALIZED (
			SELECT m.created_at, i.created_at IS NOT NULL AS again FROM pgmq.meta m
			LEFT JOIN pgbus.queue_incarnations i ON i.queue_name = m.queue_name::text
			WHERE m.queue_name::text = $1 AND i.created_at IS DISTINCT FROM m.created_at
		), f AS (
			DELETE FROM pgbus.failures f USING made WHERE f.queue_name = $1 AND f.failed_at < made.created_at
			RETURNING 1
		), k AS (
			DELETE FROM pgbus.idempotency_keys k USING made WHERE k.queue_name = $1 AND k.created_at < made.created_at
				AND NOT EXISTS (SELECT 1 FROM `+queueTable(queue)+` q WHERE q.msg_id = k.msg_id AND q.enqueued_at = k.created_at)
				AND NOT EXISTS (SELECT 1 FROM `+archiveTable(queue)+` a WHERE a.msg_id = k.msg_id AND a.enqueued_at = k.created_at)
			RETURNING 1
		), c AS (
			DELETE FROM pgbus.stats_minute s USING made WHERE s.queue_name = `+counted+`
				AND s.minute < date_trunc('minute', made.created_at)
			RETURNING 1
		), r AS (
			INSERT INTO pgbus.queue_incarnations (queue_name, created_at) SELECT $1, created_at FROM made
			ON CONFLICT (queue_name) DO UPDATE SET created_at = excluded.created_at
		)
		SELECT coalesce((SELECT again FROM made), false), (SELECT count(*) FROM f), (SELECT count(*) FROM k), (SELECT count(*) FROM c)`,
		queue).Scan(&r.again, &r.failures, &r.keys, &r.counters)
	return r, err
}

// recordMade records, in tx, the incarnation of each physical queue of
// names a create made, when none is recorded: the queue is settled from
// its start, and found made again should it be dropped and made again
// outside pgbus. A recorded one that differs (the create mends a queue
// dropped outside pgbus) is left for SettleIncarnations, which forgets
// the queue before it; the create does not wait for that. A role without
// the rights on pgbus.queue_incarnations, or a schema older than it,
// creates queues all the same.
func recordMade(ctx context.Context, tx pgx.Tx, names ...string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, `INSERT INTO pgbus.queue_incarnations (queue_name, created_at)
		SELECT queue_name::text, created_at FROM pgmq.meta WHERE queue_name::text = ANY($1::text[])
		ON CONFLICT (queue_name) DO NOTHING`, names); err != nil {
		_ = sp.Rollback(ctx)
		if IsPermissionDenied(err) || isUndefinedTable(err) {
			return nil
		}
		return fmt.Errorf("store: record the queues made: %w", err)
	}
	return sp.Commit(ctx)
}

// forgetIncarnation forgets, in tx, the incarnation recorded of physical
// queue name, which pgbus drops: the queue pgbus makes again under the name
// is a new one, which SettleIncarnations records without taking it for a
// queue made again outside pgbus. A role without the rights on
// pgbus.queue_incarnations, or a schema older than it, drops queues all
// the same: a record left behind only makes the next settle look at a
// queue whose old state the drop already deleted.
func forgetIncarnation(ctx context.Context, tx pgx.Tx, name string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, `DELETE FROM pgbus.queue_incarnations WHERE queue_name = $1`, name); err != nil {
		_ = sp.Rollback(ctx)
		if IsPermissionDenied(err) || isUndefinedTable(err) {
			return nil
		}
		return fmt.Errorf("store: drop queue %q: forget its incarnation: %w", name, err)
	}
	return sp.Commit(ctx)
}

// sqlUnsettled is the condition that a failure row f of physical queue
// queue, given as an SQL expression, was recorded before the queue was
// made while the queue is not settled (SettleIncarnations): it belongs to
// a queue of the same name dropped since, and a move out of the queue
// leaves it behind for the settle to forget. The queue's part is read
// once for a statement, not for each row.
func sqlUnsettled(queue string) string {
	return `f.failed_at < coalesce((SELECT m.created_at FROM pgmq.meta m
		LEFT JOIN pgbus.queue_incarnations i ON i.queue_name = m.queue_name::text
		WHERE m.queue_name = ` + queue + ` AND i.created_at IS DISTINCT FROM m.created_at), '-infinity')`
}
