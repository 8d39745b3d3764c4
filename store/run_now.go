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
	// InFlight takes the messages in flight (StateInFlight: read by a
	// worker, not settled, their visibility timeout not over) instead of
	// the retrying ones: after a restore or a failover the workers that
	// read them are gone, and they would wait out the timeout. A job a
	// worker still runs is made visible too, and runs twice.
	InFlight bool
	// Progress, when set, is called after each batch with the messages
	// made visible so far.
	Progress func(done int64)
}

// RunNow makes the messages of queue (every level of a queue with
// priority levels, or the one level named) that wait for their next
// attempt after a failure, in state StateRetrying, visible now, so that
// workers run them without waiting out their backoff, as after a fix to
// what failed them; with o.InFlight, those in state StateInFlight
// instead, their attempt under way counted as made, as after a crash. A message a worker reads meanwhile is left alone: its
// attempt is under way, and the batch's condition, checked again on the
// row the read left, no longer holds. It returns how many it made visible
// (in a dry run: would); on an error, how many its batches made visible
// before it, which stay so.
func (s *Store) RunNow(ctx context.Context, queue string, o RunNowOptions) (int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return 0, err
	}
	levels, err := s.liveLevels(ctx, queue)
	if err != nil {
		return 0, err
	}
	var total int64
	progress := o.Progress
	for _, l := range levels {
		before := total
		if progress != nil {
			o.Progress = func(done int64) { progress(before + done) }
		}
		n, err := s.runLevelNow(ctx, l.queue, o)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// runNowBatch bounds the messages one statement of RunNow makes visible:
// one statement over every retrying message of a large backlog (some 10 s
// for 500,000 here) met the default call bound past about 1.5 million and
// changed nothing. Batches each commit: workers start on the first while the
// next are made visible, and a call its bound stops keeps what it did,
// the same call again doing the rest. BenchmarkRunNow, 100,000 messages:
// 0.63 s in one statement, 0.83 s in batches of 50,000 (1.42 s in
// batches of 10,000). A variable for tests.
var runNowBatch = 50_000

// runLevelNow is RunNow for one physical queue.
func (s *Store) runLevelNow(ctx context.Context, queue string, o RunNowOptions) (int64, error) {
	// The states of liveCountsSQL: retrying when the attempt it is on
	// failed, in flight when it did not (yet).
	failed, state := "", "retrying"
	if o.InFlight {
		failed, state = "NOT ", "in-flight"
	}
	taken := func(after string) string {
		return `q.vt > now() AND q.read_ct > 0 AND q.msg_id > ` + after + ` AND NOT ` + breakerHeldSQL + ` AND ` + failed + lastAttemptFailedAfterSQL("$1::text", after) +
			` AND ($2::text = '' OR coalesce(q.headers->>'` + HeaderKind + `', q.message->>'job_class', '') = $2::text)`
	}
	if o.DryRun {
		var total int64
		if err := s.db.QueryRow(ctx, `SELECT count(*) FROM `+queueTable(queue)+` q WHERE `+taken("0"), queue, o.Kind).Scan(&total); err != nil {
			return 0, queueErr(err, "count the "+state+" messages of", queue)
		}
		return total, nil
	}
	n, err := s.visibleNowInBatches(ctx, queue, taken, o.Kind, o.Progress)
	if err != nil {
		return n, queueErr(err, "run the "+state+" messages now of", queue)
	}
	return n, nil
}

// visibleNowInBatches makes the messages of one physical queue that where
// selects visible now, in batches of runNowBatch, and wakes the queue's
// workers when a batch made any visible. where gives the condition on the
// table aliased q for the messages after the id it is given (SQL), and
// reads $1 (the queue's name) and $2 (arg). The batches go through the
// messages in msg_id order, each after the last one the batch before made
// visible, so that none scans again what an earlier one passed; a message
// a worker holds meanwhile is passed over, not waited for. It returns how
// many it made visible, those of the batches before an error included;
// progress, when set, is told that count after each batch.
func (s *Store) visibleNowInBatches(ctx context.Context, queue string, where func(after string) string, arg string, progress func(int64)) (int64, error) {
	// = ANY: a join with the picked rows made the planner read the whole
	// table for each batch.
	sql := `WITH picked AS (
			SELECT q.msg_id FROM ` + queueTable(queue) + ` q WHERE ` + where("$3::bigint") + `
			ORDER BY q.msg_id LIMIT $4 FOR UPDATE SKIP LOCKED
		), moved AS (
			UPDATE ` + queueTable(queue) + ` q SET vt = clock_timestamp(), headers = ` + dropBreakerHoldSQL("q") + `
			WHERE q.msg_id = ANY(ARRAY(SELECT msg_id FROM picked)) RETURNING 1
		), n AS (SELECT count(*) AS n FROM moved)
		SELECT n.n, coalesce((SELECT max(msg_id) FROM picked), 0)
		FROM n, LATERAL (SELECT CASE WHEN n.n > 0 THEN pg_notify('` + notifyChannel + `', $1::text) END) AS woken`
	var total, after int64
	for {
		var n int64 // each message picked is locked, and made visible
		if err := s.db.QueryRow(ctx, sql, queue, arg, after, runNowBatch).Scan(&n, &after); err != nil {
			return total, err
		}
		total += n
		if progress != nil {
			progress(total)
		}
		if n < int64(runNowBatch) {
			return total, nil
		}
	}
}
