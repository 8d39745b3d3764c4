package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// dlqCountedDepth is the depth of the tracked DLQ whose name is the SQL
// expression name: its base counts plus its pending deltas
// (schema/0013_dlq_group_deltas.sql). It adds the two tables up without
// grouping, which the depth does not need.
func dlqCountedDepth(name string) string {
	return `((SELECT coalesce(sum(count), 0) FROM pgbus.dlq_groups WHERE dlq = ` + name + `)
			+ (SELECT coalesce(sum(delta), 0) FROM pgbus.dlq_group_deltas WHERE dlq = ` + name + `))::bigint`
}

// dlqTrackedSQL is whether the groups of the DLQ table whose regclass is
// the SQL expression reg are kept, as pgbus.dlq_groups_tracked says
// (schema/0007_dlq_groups.sql): its four triggers exist, call
// pgbus.dlq_groups_track and fire in ordinary sessions; false for NULL.
// It is read inline, one probe of pg_trigger's index: the function, which
// sets its own search_path (schema/0025_function_search_path.sql), is
// never expanded in place, and each call, a function call with its own
// settings, cost a read of every queue's stats 0.1 ms a table.
func dlqTrackedSQL(reg string) string {
	return `((SELECT count(*) FROM pg_catalog.pg_trigger t
		 WHERE t.tgrelid = ` + reg + ` AND t.tgname IN ('pgbus_dlq_groups_ins', 'pgbus_dlq_groups_del', 'pgbus_dlq_groups_upd', 'pgbus_dlq_groups_trunc')
		   AND t.tgfoid = 'pgbus.dlq_groups_track()'::pg_catalog.regprocedure AND t.tgenabled IN ('O', 'A')) = 4)`
}

// dlqCountedDepthsCTE is the common table expression counted_depths
// (dlq, depth): the depth, base counts plus pending deltas, of each DLQ
// named in the SQL text[] expression names that has any, read once for
// all of them. A subquery per name (dlqCountedDepth) is planned from the
// statistics of the whole table: once ANALYZE saw one DLQ hold nearly all
// of its rows, the planner expected half the table for any DLQ and
// scanned all of it once per name. MATERIALIZED keeps it from being
// pushed back into a join per name.
func dlqCountedDepthsCTE(names string) string {
	return `counted_depths AS MATERIALIZED (
			SELECT dlq, sum(n)::bigint AS depth
			FROM (SELECT dlq, count AS n FROM pgbus.dlq_groups WHERE dlq = ANY(` + names + `)
			      UNION ALL
			      SELECT dlq, delta FROM pgbus.dlq_group_deltas WHERE dlq = ANY(` + names + `)) c
			GROUP BY dlq)`
}

// deadHoldingSQL selects those of the DLQs named in $1, in their order,
// that may hold messages (deadHolding).
var deadHoldingSQL = `
		WITH ` + dlqCountedDepthsCTE("$1::text[]") + `
		SELECT u.n FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i)
		     CROSS JOIN LATERAL to_regclass(format('%I.%I', 'pgmq', 'q_' || u.n)) AS r
		     LEFT JOIN counted_depths d ON d.dlq = u.n
		WHERE r IS NULL OR NOT pgbus.dlq_groups_tracked(r) OR coalesce(d.depth, 0) <> 0 OR pg_stat_get_live_tuples(r) > 0
		ORDER BY u.i`

// deadHolding returns those of dlqs, in their order, that may hold
// messages: all but the tracked ones whose group counts, exact at every
// snapshot, say they are empty. A list over every DLQ then plans and locks
// only the tables it may find a row in, not thousands of empty ones. A
// DLQ whose table is gone is kept, for its read to say so; so is one the
// statistics system counts rows in, which the group counts may have
// missed: rows written with triggers off (session_replication_role
// replica, as pg_restore --disable-triggers and logical replication
// write) are counted by no group until pgbus migrate counts them again,
// and the list is where they still show. Neither look locks the table.
func deadHolding(ctx context.Context, tx pgx.Tx, dlqs []string) ([]string, error) {
	rows, err := tx.Query(ctx, deadHoldingSQL, dlqs)
	if err != nil {
		return nil, fmt.Errorf("store: read which dead-letter queues hold messages: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: read which dead-letter queues hold messages: %w", err)
	}
	return out, nil
}

// FoldDeadCounts moves the pending deltas of every DLQ's group counts into
// their base rows and returns how many delta rows it folded. Summaries
// and depths are the same before and after; folding keeps the deltas,
// which every writing statement on a DLQ appends to, few. Each DLQ is
// folded in its own transaction, after any fold of it under way.
func (s *Store) FoldDeadCounts(ctx context.Context) (int64, error) {
	rows, err := s.db.Query(ctx, `SELECT DISTINCT dlq FROM pgbus.dlq_group_deltas`)
	if err != nil {
		return 0, fmt.Errorf("store: fold the dead-letter group counts: list the DLQs with pending deltas: %w", err)
	}
	dlqs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("store: fold the dead-letter group counts: list the DLQs with pending deltas: %w", err)
	}
	var total int64
	for _, dlq := range dlqs {
		var n int64
		// READ COMMITTED, whatever the pool's default: the fold must see
		// what an earlier fold committed (see the migration).
		err := pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT pgbus.dlq_groups_fold($1)`, dlq).Scan(&n)
		})
		if err != nil {
			return total, fmt.Errorf("store: fold the group counts of dead-letter queue %q: %w", dlq, err)
		}
		total += n
	}
	return total, nil
}
