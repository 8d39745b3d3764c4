package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// QueueTablesGone is a queue pgbus's settings list (pgbus.queues) one of
// whose work tables is gone: a restore of a dump that left PGMQ's tables
// out (pg_dump leaves out an extension's member tables), or a drop outside
// pgbus.
type QueueTablesGone struct {
	Queue string
	// Priorities is the number of the queue's priority levels, 0 for a
	// queue without: what a create that makes it again must give.
	Priorities int
	// Missing are the tables gone, pgmq.q_<physical>: of its levels, and
	// of its DLQ when that is gone too.
	Missing []string
	// OnlyDLQ marks a queue whose work tables are there, its DLQ's alone
	// gone (Missing names it): its messages are there, but those that fail
	// their last attempt cannot be dead-lettered.
	OnlyDLQ bool
}

// QueuesWithoutTables lists the queues of pgbus.queues whose work table,
// or that of one of their priority levels, is gone, with the queue tables
// of theirs that are, by name byte by byte. It is one statement that asks
// the catalog for two or so names a queue, cheap enough for every health
// check. A queue whose DLQ alone is gone is listed (OnlyDLQ) when the DLQ
// was made: by pgbus's create, which makes one with every queue, or since
// the queue was registered without one (pgbus.queues.dlq_unmade, which
// CreateDLQ clears), so that a drop by pgmq.drop_queue, which takes its
// archive and row of pgmq.meta with it, is told; or when it left a trace
// of those, as a DROP TABLE of it by hand does. A queue another PGMQ
// client made, registered with pgbus without a DLQ that anyone made
// since, never had one.
func (s *Store) QueuesWithoutTables(ctx context.Context) ([]QueueTablesGone, error) {
	rows, err := s.reads.Query(ctx, `
		SELECT queue_name, priorities, missing, NOT work_gone FROM (
		  SELECT q.queue_name, q.priorities,
		         to_regclass(format('pgmq.%I', 'q_' || q.queue_name || $1)) IS NULL
		           AND (to_regclass(format('pgmq.%I', 'a_' || q.queue_name || $1)) IS NOT NULL
		                OR EXISTS (SELECT FROM pgmq.meta m WHERE m.queue_name = q.queue_name || $1)
		                OR NOT q.dlq_unmade) AS dlq_lost,
		         ARRAY(SELECT 'pgmq.q_' || t.name FROM unnest(
		                 CASE WHEN q.priorities = 0 THEN ARRAY[q.queue_name]
		                      ELSE ARRAY(SELECT q.queue_name || '_p' || p FROM generate_series(0, q.priorities - 1) AS p ORDER BY p) END
		                 || (q.queue_name || $1)) WITH ORDINALITY AS t(name, n)
		               WHERE to_regclass(format('pgmq.%I', 'q_' || t.name)) IS NULL ORDER BY t.n) AS missing,
		         EXISTS (SELECT FROM generate_series(0, greatest(q.priorities, 1) - 1) AS p
		                 WHERE to_regclass(format('pgmq.%I', 'q_' || CASE WHEN q.priorities = 0 THEN q.queue_name ELSE q.queue_name || '_p' || p END)) IS NULL) AS work_gone
		  FROM pgbus.queues q) x
		WHERE work_gone OR dlq_lost ORDER BY queue_name COLLATE "C"`, DLQSuffix)
	if err != nil {
		return nil, fmt.Errorf("store: list the queues whose tables are gone: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueTablesGone, error) {
		var q QueueTablesGone
		err := r.Scan(&q.Queue, &q.Priorities, &q.Missing, &q.OnlyDLQ)
		return q, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list the queues whose tables are gone: %w", err)
	}
	return out, nil
}
