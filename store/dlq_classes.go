package store

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DeadClassCount counts the dead messages of one DLQ that died with one
// error class ("" when none was recorded) for one reason ("" when the
// message has no dead-letter block, or its block names none).
type DeadClassCount struct {
	DLQ        string `json:"dlq"`
	ErrorClass string `json:"error_class"`
	Reason     string `json:"reason"`
	Count      int64  `json:"count"`
}

// CountDeadByClass counts the dead messages f selects by DLQ, error class
// and reason, every one of them: the roll-up of a summary's groups by
// their error class, across the DLQs, which no page of groups leaves out.
// Without a filter on time, text, group or payload size it counts from
// pgbus.dlq_group_counts, as SummarizeDeadReport does; otherwise, and for
// DLQs without its triggers, it reads every message f selects. The rows
// are ordered by DLQ, error class and reason, all read in one snapshot.
func (s *Store) CountDeadByClass(ctx context.Context, f DeadFilter) ([]DeadClassCount, error) {
	out := []DeadClassCount{}
	if err := f.validate(); err != nil {
		return out, err
	}
	err := s.runDead(ctx, f, func(q *deadQuery) error {
		out = []DeadClassCount{}
		opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
		return pgx.BeginTxFunc(ctx, s.db, opts, func(tx pgx.Tx) error {
			var err error
			if q.dlqs, err = deadHolding(ctx, tx, q.dlqs); err != nil || len(q.dlqs) == 0 {
				return err
			}
			scan := q.dlqs
			if !probeOf(ctx).only() && f.Since.IsZero() && f.Until.IsZero() && f.Text == "" && f.Group == "" && f.MinPayloadBytes == 0 {
				tracked, err := deadTracked(ctx, tx, q.dlqs)
				if err != nil {
					return err
				}
				if len(tracked) > 0 {
					counted, err := classesFromCounts(ctx, tx, tracked, f)
					if err != nil {
						return err
					}
					out = append(out, counted...)
				}
				scan = slices.DeleteFunc(slices.Clone(q.dlqs), func(d string) bool { return tracked[d] })
			}
			if len(scan) == 0 {
				return nil
			}
			probeOf(ctx).saw(scan)
			return inChunks(ctx, tx, scan, func(tx pgx.Tx, chunk []string) error {
				cq := q.chunk(chunk)
				sql := cq.union(`coalesce(`+sqlDeadBlock+`->>'error_class', '') AS error_class,
					coalesce(`+sqlDeadBlock+`->>'reason', '') AS reason, count(*) AS n`, nil, "GROUP BY 2, 3")
				rows, err := tx.Query(ctx, sql, cq.args...)
				if err != nil {
					return err
				}
				got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DeadClassCount])
				out = append(out, got...)
				return err
			})
		})
	})
	if err != nil {
		return []DeadClassCount{}, wrapDead("count dead messages by error class", err)
	}
	slices.SortFunc(out, func(a, b DeadClassCount) int {
		return cmp.Or(strings.Compare(a.DLQ, b.DLQ), strings.Compare(a.ErrorClass, b.ErrorClass), strings.Compare(a.Reason, b.Reason))
	})
	return out, nil
}

// classesFromCounts counts the messages of the tracked DLQs by error
// class and reason from their group counts, with f's kind, error class
// and reason, as summaryFromGroups selects them.
func classesFromCounts(ctx context.Context, tx pgx.Tx, tracked map[string]bool, f DeadFilter) ([]DeadClassCount, error) {
	dlqs := slices.Collect(maps.Keys(tracked))
	rows, err := tx.Query(ctx, `
		SELECT dlq, error_class, coalesce(reason, ''), sum(count)::bigint
		FROM pgbus.dlq_group_counts
		WHERE dlq = ANY($1) AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR error_class = $3)
		  AND ($4::text IS NULL OR CASE WHEN $4 = '`+ReasonNotRecorded+`' THEN coalesce(reason, '') = '' ELSE reason = $4 END)
		GROUP BY dlq, error_class, coalesce(reason, '')
		HAVING sum(count) > 0`,
		dlqs, orNull(f.Kind), orNull(fitOf(tx.Conn()).apply(f.ErrorClass)), orNull(f.Reason))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[DeadClassCount])
}
