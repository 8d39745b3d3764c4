package store

import (
	"context"
)

// RunNowOptions narrow and qualify a RunNow.
type RunNowOptions struct {
	// Kind, when set, takes only the messages of this job kind (the
	// pgbus_kind header, or a Ruby pgbus payload's job_class), as when
	// the fix was to one kind's downstream.
	Kind string
	// DryRun counts the messages and changes nothing.
	DryRun bool
}

// RunNow makes the messages of queue (every level of a queue with
// priority levels, or the one level named) that wait for their next
// attempt after a failure, in state StateRetrying, visible now, so that
// workers run them without waiting out their backoff, as after a fix to
// what failed them. A message a worker reads meanwhile is left alone: its
// attempt is under way, and the statement's condition, checked again on
// the row the read left, no longer holds. It returns how many it made
// visible (in a dry run: would).
func (s *Store) RunNow(ctx context.Context, queue string, o RunNowOptions) (int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return 0, err
	}
	levels, err := s.liveLevels(ctx, queue)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range levels {
		n, err := s.runLevelNow(ctx, l.queue, o)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// runLevelNow is RunNow for one physical queue; it wakes the queue's
// workers when it made any message visible.
func (s *Store) runLevelNow(ctx context.Context, queue string, o RunNowOptions) (int64, error) {
	retrying := `q.vt > now() AND q.read_ct > 0 AND ` + lastAttemptFailedSQL("$1::text") +
		` AND ($2::text = '' OR coalesce(q.headers->>'` + HeaderKind + `', q.message->>'job_class', '') = $2::text)`
	sql := `WITH moved AS (
			UPDATE ` + queueTable(queue) + ` q SET vt = clock_timestamp() WHERE ` + retrying + ` RETURNING 1
		), n AS (SELECT count(*) AS n FROM moved)
		SELECT n.n FROM n, LATERAL (SELECT CASE WHEN n.n > 0 THEN pg_notify('` + notifyChannel + `', $1::text) END) AS woken`
	if o.DryRun {
		sql = `SELECT count(*) FROM ` + queueTable(queue) + ` q WHERE ` + retrying
	}
	var n int64
	if err := s.db.QueryRow(ctx, sql, queue, o.Kind).Scan(&n); err != nil {
		return 0, queueErr(err, "run the retrying messages now of", queue)
	}
	return n, nil
}
