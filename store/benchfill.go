package store

import (
	"context"
	"fmt"
	"strings"
)

// MaxBulkSend is the most messages BulkSend writes in one call.
const MaxBulkSend = 100_000_000

// BulkSend writes n messages {"n": 1..n} into queue, visible at once, with
// INSERT ... SELECT generate_series in statements of 100,000 rows: the
// database makes the rows, so a backlog of millions is queued in seconds
// and the client holds none of it. It exists for benchmarks (pgbus bench
// --backlog) and sends no notification: the workers start afterwards.
func (s *Store) BulkSend(ctx context.Context, queue string, n int) error {
	if err := ValidatePhysicalName(queue); err != nil {
		return err
	}
	if n < 1 || n > MaxBulkSend {
		return invalidf("bulk send to %q: n must be 1 to %d, not %d", queue, MaxBulkSend, n)
	}
	const batch = 100_000
	sql := `INSERT INTO ` + queueTable(queue) + ` (vt, message)
		SELECT clock_timestamp(), jsonb_build_object('n', g)
		FROM generate_series($1::bigint, $2::bigint) AS g`
	for from := 1; from <= n; from += batch {
		to := min(from+batch-1, n)
		if _, err := s.db.Exec(ctx, sql, from, to); err != nil {
			return queueErr(err, fmt.Sprintf("bulk send messages %d to %d of %d to", from, to, n), queue)
		}
	}
	return nil
}

// TableStats is what PostgreSQL's statistics say about one table: the
// figures that show whether a queue's tables bloat under load.
type TableStats struct {
	// Table is the qualified name, such as pgmq.q_orders.
	Table string `json:"table"`
	// LiveTuples and DeadTuples are pg_stat_user_tables' n_live_tup and
	// n_dead_tup: rows visible and rows deleted or updated but not yet
	// vacuumed away.
	LiveTuples int64 `json:"live_tuples"`
	DeadTuples int64 `json:"dead_tuples"`
	// Inserted, Updated and Deleted count the rows ever written so
	// (n_tup_ins, n_tup_upd, n_tup_del).
	Inserted int64 `json:"inserted"`
	Updated  int64 `json:"updated"`
	Deleted  int64 `json:"deleted"`
	// Autovacuums and Autoanalyzes count autovacuum's passes over the
	// table. Each sets LiveTuples and DeadTuples anew from what it saw,
	// so under concurrent writes those two are estimates, unlike the
	// counts of rows written.
	Autovacuums  int64 `json:"autovacuums"`
	Autoanalyzes int64 `json:"autoanalyzes"`
	// TableBytes is pg_relation_size: the table's rows alone.
	TableBytes int64 `json:"table_bytes"`
	// TotalBytes is pg_total_relation_size: the table, its indexes and its
	// TOAST.
	TotalBytes int64 `json:"total_bytes"`
}

// QueueTableStats returns the statistics of queue's table, its archive and
// its DLQ's table, in that order. The figures come from the cumulative
// statistics system, which each server process updates about once a second
// while it is idle, so they trail the latest writes by as much.
func (s *Store) QueueTableStats(ctx context.Context, queue string) ([]TableStats, error) {
	if err := ValidateQueueName(queue); err != nil {
		return nil, err
	}
	names := []string{"q_" + queue, "a_" + queue, "q_" + DLQName(queue)}
	rows, err := s.reads.Query(ctx, `
		SELECT 'pgmq.' || n.name, coalesce(st.n_live_tup, 0), coalesce(st.n_dead_tup, 0),
		       coalesce(st.n_tup_ins, 0), coalesce(st.n_tup_upd, 0), coalesce(st.n_tup_del, 0),
		       coalesce(st.autovacuum_count, 0), coalesce(st.autoanalyze_count, 0), pg_relation_size(c.oid), pg_total_relation_size(c.oid)
		FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
		JOIN pg_namespace ns ON ns.nspname = 'pgmq'
		JOIN pg_class c ON c.relnamespace = ns.oid AND c.relname = n.name
		LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
		ORDER BY n.ord`, names)
	if err != nil {
		return nil, queueErr(err, "read the table statistics of", queue)
	}
	defer rows.Close()
	var out []TableStats
	for rows.Next() {
		var t TableStats
		if err := rows.Scan(&t.Table, &t.LiveTuples, &t.DeadTuples, &t.Inserted, &t.Updated, &t.Deleted, &t.Autovacuums, &t.Autoanalyzes, &t.TableBytes, &t.TotalBytes); err != nil {
			return nil, queueErr(err, "read the table statistics of", queue)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, queueErr(err, "read the table statistics of", queue)
	}
	if len(out) != len(names) {
		return nil, queueErr(errUndefinedTable, "read the table statistics of", queue)
	}
	return out, nil
}

// DoneCounts says where the finished messages of a queue are: how many
// rows its archive and its DLQ hold, and how many distinct messages of the
// queue those rows are (archived rows by msg_id, dead ones by the
// source_msg_id of their dead-letter header). A message done twice shows
// as more rows than distinct messages.
type DoneCounts struct {
	Archived     int64 `json:"archived"`
	DeadLettered int64 `json:"dead_lettered"`
	Distinct     int64 `json:"distinct"`
}

// CountDone counts queue's finished messages, for benchmarks that must
// know every job was done exactly once before they report a figure. It
// reads both tables in full.
func (s *Store) CountDone(ctx context.Context, queue string) (DoneCounts, error) {
	var d DoneCounts
	if err := ValidateQueueName(queue); err != nil {
		return d, err
	}
	err := s.reads.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE archived), count(*) FILTER (WHERE NOT archived), count(DISTINCT id)
		FROM (
			SELECT msg_id AS id, true AS archived FROM `+archiveTable(queue)+`
			UNION ALL
			SELECT (headers->'`+HeaderDeadLetter+`'->>'source_msg_id')::bigint, false FROM `+queueTable(DLQName(queue))+`
		) AS done`).Scan(&d.Archived, &d.DeadLettered, &d.Distinct)
	if err != nil {
		return d, s.archiveErr(ctx, err, "count the finished messages of", queue)
	}
	return d, nil
}

// ClaimArchive moves up to n visible messages of queue to its archive in
// one statement: it claims them in order with FOR UPDATE SKIP LOCKED,
// deletes them and inserts them into the archive, and returns how many
// moved. It is the least work that drains a queue in the PGMQ layout, so
// several connections running it in a loop measure the database's own
// ceiling for a drain (pgbus bench --workload ceiling), against which the
// workers' rate is judged. Benchmarks only: nothing runs and nothing is
// counted.
func (s *Store) ClaimArchive(ctx context.Context, queue string, n int) (int, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return 0, err
	}
	if n < 1 || n > MaxBatch {
		return 0, invalidf("claim and archive in %q: n must be 1 to %d, not %d", queue, MaxBatch, n)
	}
	cols := "msg_id, read_ct, enqueued_at, vt, message, headers"
	tag, err := s.db.Exec(ctx, `WITH c AS (
			SELECT msg_id FROM `+queueTable(queue)+` WHERE vt <= clock_timestamp()
			ORDER BY msg_id LIMIT $1 FOR UPDATE SKIP LOCKED
		), d AS (
			DELETE FROM `+queueTable(queue)+` q USING c WHERE q.msg_id = c.msg_id RETURNING q.`+strings.ReplaceAll(cols, ", ", ", q.")+`
		)
		INSERT INTO `+archiveTable(queue)+` (`+cols+`) SELECT `+cols+` FROM d`, n)
	if err != nil {
		return 0, s.archiveErr(ctx, err, "claim and archive in", queue)
	}
	return int(tag.RowsAffected()), nil
}
