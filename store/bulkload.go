package store

import (
	"context"
)

// BulkLoadDead writes n synthetic dead messages straight into queue's DLQ,
// spread over classes error classes and five kinds, in batches of 100,000
// rows. It exists for benchmarks (pgbus bench dlq): the messages never ran.
func (s *Store) BulkLoadDead(ctx context.Context, queue string, n, classes int) error {
	if err := ValidateQueueName(queue); err != nil {
		return err
	}
	if n < 1 || n > 100_000_000 || classes < 1 || classes > 10_000 {
		return invalidf("bulk load %q: n must be 1 to 100,000,000 and classes 1 to 10,000", queue)
	}
	const batch = 100_000
	dlq := DLQName(queue)
	sql := `INSERT INTO ` + queueTable(dlq) + ` (vt, enqueued_at, message, headers)
		SELECT now(), now() - (($4 - g) * interval '1 millisecond'),
		       jsonb_build_object('n', g, 'order_id', 'ord-' || g),
		       jsonb_build_object('` + HeaderKind + `', 'kind_' || (g % 5), '` + HeaderDeadLetter + `', jsonb_build_object(
		           'version', 1, 'reason', CASE WHEN g % 3 = 0 THEN 'non_retryable_error' ELSE 'max_retries_exceeded' END,
		           'source', 'worker', 'source_queue', $1::text, 'source_msg_id', g,
		           'source_enqueued_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
		           'attempts', 5, 'max_retries', 5,
		           'dead_lettered_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
		           'error_class', 'bench.Error' || (g % $5), 'error_message', 'simulated failure ' || (g % $5) || ' of message ' || g,
		           'error_attempt', 5,
		           'error_recorded_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
		FROM generate_series($2::bigint, $3::bigint) AS g`
	for from := 1; from <= n; from += batch {
		to := min(from+batch-1, n)
		if _, err := s.db.Exec(ctx, sql, queue, from, to, n, classes); err != nil {
			return queueErr(err, "bulk load the DLQ of", queue)
		}
	}
	if _, err := s.db.Exec(ctx, `ANALYZE `+queueTable(dlq)); err != nil {
		return queueErr(err, "analyze the DLQ of", queue)
	}
	return nil
}
