package store

import (
	"context"
)

// RunNow makes the messages of queue (every level of a queue with
// priority levels, or the one level named) that wait for their next
// attempt after a failure, in state StateRetrying, visible now, so that
// workers run them without waiting out their backoff, as after a fix to
// what failed them. A message a worker reads meanwhile is left alone: its
// attempt is under way, and the statement's condition, checked again on
// the row the read left, no longer holds. With dryRun it counts them and
// changes nothing. It returns how many it made visible (or would).
func (s *Store) RunNow(ctx context.Context, queue string, dryRun bool) (int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return 0, err
	}
	levels, err := s.liveLevels(ctx, queue)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range levels {
		n, err := s.runLevelNow(ctx, l.queue, dryRun)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// runLevelNow is RunNow for one physical queue; it wakes the queue's
// workers when it made any message visible.
func (s *Store) runLevelNow(ctx context.Context, queue string, dryRun bool) (int64, error) {
	retrying := `q.vt > now() AND q.read_ct > 0 AND ` + lastAttemptFailedSQL("$1::text")
	sql := `WITH moved AS (
			UPDATE ` + queueTable(queue) + ` q SET vt = clock_timestamp() WHERE ` + retrying + ` RETURNING 1
		), n AS (SELECT count(*) AS n FROM moved)
		SELECT n.n FROM n, LATERAL (SELECT CASE WHEN n.n > 0 THEN pg_notify('` + notifyChannel + `', $1::text) END) AS woken`
	if dryRun {
		sql = `SELECT count(*) FROM ` + queueTable(queue) + ` q WHERE ` + retrying
	}
	var n int64
	if err := s.db.QueryRow(ctx, sql, queue).Scan(&n); err != nil {
		return 0, queueErr(err, "run the retrying messages now of", queue)
	}
	return n, nil
}
