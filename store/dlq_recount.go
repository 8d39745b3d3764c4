package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// DLQRecount is a DLQ whose group counts did not add up to the rows its
// table holds, recounted.
type DLQRecount struct {
	DLQ string `json:"dlq"`
	// Counted is what its group counts said; Rows what its table held,
	// which they now say.
	Counted int64 `json:"counted"`
	Rows    int64 `json:"rows"`
}

// sqlCountedDLQs lists each DLQ whose group counts are kept by its
// triggers.
const sqlCountedDLQs = `
	SELECT m.queue_name
	FROM pgmq.meta m
	JOIN pg_catalog.pg_class c ON c.relnamespace = 'pgmq'::regnamespace AND c.relname = 'q_' || m.queue_name
	WHERE m.queue_name ~ '^[a-z][a-z0-9_]*_dlq$' AND length(m.queue_name) <= 47
	  AND pgbus.dlq_groups_tracked(c.oid)
	ORDER BY m.queue_name COLLATE "C"`

// RecountDLQs rebuilds the group counts of each DLQ whose counts do not
// add up to the rows of its table, and returns those it recounted. Counts
// drift only when rows reach a table past its triggers or twice through
// them: a restore that loads the data after the triggers (pg_restore
// --schema-only, then --data-only) counts every dead message twice, in the
// counts it restores and again as its rows arrive. Each DLQ is read whole
// (a count of its rows), so this runs on request (pgbus migrate), not at
// every start; a DLQ it may not lock within migrationLockWait is an error
// naming it, once the others are done.
func (s *Store) RecountDLQs(ctx context.Context) ([]DLQRecount, error) {
	rows, err := s.reads.Query(ctx, sqlCountedDLQs)
	if err != nil {
		return nil, fmt.Errorf("store: recount the dead-letter groups: list the DLQs: %w", err)
	}
	dlqs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: recount the dead-letter groups: list the DLQs: %w", err)
	}
	var out []DLQRecount
	var failed error
	for _, dlq := range dlqs {
		r := DLQRecount{DLQ: dlq}
		// Rows and counts in one statement: one snapshot, in which a
		// dead-lettering's rows and their counts are both there or not.
		err := s.reads.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+queueTable(dlq)+`), `+dlqCountedDepth("$1"), dlq).Scan(&r.Rows, &r.Counted)
		if err == nil && r.Rows == r.Counted {
			continue
		}
		if err == nil {
			err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
				if err := setLockTimeout(ctx, tx, migrationLockWait); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `SELECT pgbus.dlq_groups_backfill($1)`, dlq)
				return err
			})
		}
		switch {
		case isUndefinedTable(err):
			continue // dropped meanwhile
		case err != nil:
			failed = fmt.Errorf("store: recount the groups of dead-letter queue %q: %w", dlq, err)
			continue
		}
		if err := s.reads.QueryRow(ctx, `SELECT count(*) FROM `+queueTable(dlq)).Scan(&r.Rows); err != nil && !isUndefinedTable(err) {
			failed = fmt.Errorf("store: recount the groups of dead-letter queue %q: %w", dlq, err)
		}
		out = append(out, r)
	}
	return out, failed
}
