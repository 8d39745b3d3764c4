package store

import (
	"context"
	"time"
)

// The worker's outcomes other than success and dead-lettering. Each is one
// statement for a batch of messages of one physical queue, so a batch of
// outcomes costs one round trip.

// RetryItem schedules the next attempt of a failed message.
type RetryItem struct {
	MsgID   int64
	Delay   time.Duration
	Failure Failure
	// ReadCount and EnqueuedAt are those of the read that failed, as in
	// Claim: the retry is written only while the message is still at that
	// read. ReadCount 0 retries the message at any read.
	ReadCount  int
	EnqueuedAt time.Time
}

// RetryMany records each failure and makes its message visible again after
// its delay; the queue row itself is the retry. It returns the ids updated;
// ids no longer in the queue, or no longer at the read the item names, are
// skipped and record no failure.
func (s *Store) RetryMany(ctx context.Context, queue string, items []RetryItem) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	c := newClaimColumns(len(items))
	delays := make([]int64, len(items))
	f := newFailureColumns(len(items), s.textFit(ctx))
	for i, it := range items {
		cl := Claim{MsgID: it.MsgID, ReadCount: it.ReadCount, EnqueuedAt: it.EnqueuedAt}
		if err := validateClaim("retry in", queue, cl); err != nil {
			return nil, err
		}
		c.add(cl)
		delays[i] = max(it.Delay, 0).Microseconds()
		f.add(it.Failure)
	}
	sql := `WITH t AS (
			SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::int[], $11::timestamptz[])
				AS t(id, delay_us, attempt, kind, class, message, backtrace, detail, claim_ct, claim_enq)
		), ` + lockInOrderSQL(queueTable(queue), "q.msg_id = ANY($2::bigint[])", "NO KEY UPDATE") + `, u AS (
			UPDATE ` + queueTable(queue) + ` q SET vt = now() + t.delay_us * interval '1 microsecond'
			FROM t WHERE q.msg_id = t.id AND ` + sqlClaimed + ` AND ` + sqlLocked + `
			RETURNING q.msg_id, q.vt
		), f AS (
			INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message, backtrace, detail, failed_at, retry_at)
			SELECT $1, t.id, t.attempt, t.kind, t.class, t.message, t.backtrace, t.detail::jsonb, now(), u.vt
			FROM t JOIN u ON u.msg_id = t.id
		)
		SELECT msg_id FROM u`
	return s.collectIDs(ctx, "retry in", queue, sql, queue, c.ids, delays, f.attempts, f.kinds, f.classes, f.messages, f.backtraces, f.details, c.reads, c.enqs)
}

// SnoozeItem puts a message off without using an attempt.
type SnoozeItem struct {
	MsgID int64
	Delay time.Duration
	// Breaker names the open circuit breaker that snoozes the message,
	// which marks it held (HeaderBreakerHold); empty for a handler's own
	// snooze.
	Breaker string
	// Probe, for a hold by a half-open breaker, is the ProbeUntil of the
	// probe the message waits out (BreakerVerdict.ProbeUntil): it waits
	// until then, and, should that probe have ended before the snooze is
	// written, as the breaker says now instead (at once when it closed),
	// since the end of the probe woke the holds written before it.
	Probe time.Time
	// ReadCount and EnqueuedAt are those of the read snoozed, as in
	// Claim; ReadCount 0 snoozes the message at any read.
	ReadCount  int
	EnqueuedAt time.Time
}

// SnoozeMany makes messages visible again after their delays without using
// an attempt: read_ct is put back. It returns the ids updated; a message no
// longer at the read the item names is left as it is.
func (s *Store) SnoozeMany(ctx context.Context, queue string, items []SnoozeItem) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	c := newClaimColumns(len(items))
	us := make([]int64, len(items))
	breakers := make([]string, len(items))
	probes := make([]*time.Time, len(items))
	for i, it := range items {
		cl := Claim{MsgID: it.MsgID, ReadCount: it.ReadCount, EnqueuedAt: it.EnqueuedAt}
		if err := validateClaim("snooze in", queue, cl); err != nil {
			return nil, err
		}
		c.add(cl)
		us[i], breakers[i] = max(it.Delay, 0).Microseconds(), it.Breaker
		if !it.Probe.IsZero() && it.Breaker != "" {
			probes[i] = &it.Probe
		}
	}
	// A handler's snooze is counted (HeaderSnoozes), a breaker's marks
	// the hold instead. JSON null headers, what a producer's nil map
	// marshals to, count as none. Headers that are another JSON value (an
	// array, a string: another client's) are left as they are by a
	// handler's snooze, which would change what its job's next run sees:
	// such a message waits out its snooze, uncounted. A breaker's wraps
	// them, with the mark (holdSQL), so that the hold shows and its reset
	// finds it, and the read that takes the mark off gives them back as
	// they were (dropBreakerHoldSQL). The row of a breaker whose probe a hold waits out
	// is read locked: the end of the probe, which then wakes the holds
	// (WakeProbeHolds), either comes after this write, and finds it, or
	// before, and this write sees the breaker as it left it.
	sql := `WITH ` + lockInOrderSQL(queueTable(queue), "q.msg_id = ANY($1::bigint[])", "NO KEY UPDATE") + `, b AS MATERIALIZED (
			SELECT name, state, open_until, probe_until FROM pgbus.circuit_breakers
			WHERE name = ANY(ARRAY(SELECT p.breaker FROM unnest($5::text[], $6::timestamptz[]) AS p(breaker, probe) WHERE p.probe IS NOT NULL))
			ORDER BY name FOR SHARE
		)
		UPDATE ` + queueTable(queue) + ` q
		SET vt = CASE WHEN t.probe IS NULL OR b.name IS NULL THEN now() + t.delay_us * interval '1 microsecond'
				WHEN b.state = 'half_open' AND b.probe_until = t.probe THEN greatest(t.probe, now())
				ELSE greatest(` + breakerWakeSQL("b") + `, now()) END,
			read_ct = greatest(q.read_ct - 1, 0),
			headers = CASE WHEN t.breaker <> '' THEN ` + holdSQL("q.headers", "t.breaker", "greatest(q.read_ct - 1, 0)") + `
				WHEN q.headers IS NULL OR jsonb_typeof(q.headers) = 'null' THEN jsonb_build_object('` + HeaderSnoozes + `', 1)
				WHEN jsonb_typeof(q.headers) <> 'object' THEN q.headers
				ELSE q.headers || jsonb_build_object('` + HeaderSnoozes + `', 1 + CASE
					WHEN jsonb_typeof(q.headers->'` + HeaderSnoozes + `') = 'number'
					THEN least(greatest(trunc((q.headers->>'` + HeaderSnoozes + `')::numeric), 0), 1000000000)::int
					ELSE 0 END) END
		FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::timestamptz[], $5::text[], $6::timestamptz[]) AS t(id, delay_us, claim_ct, claim_enq, breaker, probe)
			LEFT JOIN b ON t.probe IS NOT NULL AND b.name = t.breaker
		WHERE q.msg_id = t.id AND ` + sqlClaimed + ` AND ` + sqlLocked + `
		RETURNING q.msg_id`
	return s.collectIDs(ctx, "snooze in", queue, sql, c.ids, us, c.reads, c.enqs, breakers, probes)
}

// GiveBack returns the attempt of a read whose job was cut off unfinished
// by a stop (not by a failure): the message is visible again after delay,
// with read_ct as before that read, so that stopping workers, as every
// deploy does, uses up no attempts. It does nothing when the message is no
// longer at the read claimed (read again meanwhile, or another message of
// the id in a queue made again) or is gone; it reports whether it gave the
// attempt back.
func (s *Store) GiveBack(ctx context.Context, queue string, c Claim, delay time.Duration) (bool, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return false, err
	}
	tag, err := s.db.Exec(ctx, `UPDATE `+queueTable(queue)+`
		SET vt = now() + $3 * interval '1 microsecond', read_ct = read_ct - 1
		WHERE msg_id = $1 AND read_ct = $2 AND read_ct > 0 AND enqueued_at = $4`, c.MsgID, c.ReadCount, max(delay, 0).Microseconds(), c.EnqueuedAt)
	if err != nil {
		return false, queueErr(err, "give back a read of", queue)
	}
	return tag.RowsAffected() == 1, nil
}

// DiscardItem archives a failed message without dead-lettering it.
type DiscardItem struct {
	MsgID   int64
	Failure Failure
	// ReadCount and EnqueuedAt are those of the read that failed, as in
	// Claim; ReadCount 0 discards the message at any read.
	ReadCount  int
	EnqueuedAt time.Time
}

// DiscardMany records each failure and archives its message with the
// pgbus_discarded header: it never reaches the DLQ. It returns the ids
// moved; a message no longer at the read the item names is left as it is.
func (s *Store) DiscardMany(ctx context.Context, queue string, items []DiscardItem) ([]int64, error) {
	sql, args, err := s.discardSQL(ctx, queue, items, false)
	if err != nil || sql == "" {
		return nil, err
	}
	return s.collectIDs(ctx, "discard in", queue, sql, args...)
}

// DiscardManyKeepingOlder discards as DiscardMany does, but for a message
// whose id the queue's archive already holds, an older message's (see
// ArchiveClaimedKeepingOlder), which DiscardMany is refused for every
// time: the archive keeps its older row, and the message is deleted from
// the queue without a copy there or its failure recorded. It returns the
// ids archived and the ids deleted so.
func (s *Store) DiscardManyKeepingOlder(ctx context.Context, queue string, items []DiscardItem) (archived, deleted []int64, err error) {
	sql, args, err := s.discardSQL(ctx, queue, items, true)
	if err != nil || sql == "" {
		return nil, nil, err
	}
	return s.collectArchived(ctx, "discard in", queue, sql, args...)
}

// discardSQL returns the statement of DiscardMany and its arguments, or
// of DiscardManyKeepingOlder when keepOlder; no statement for no items.
func (s *Store) discardSQL(ctx context.Context, queue string, items []DiscardItem, keepOlder bool) (string, []any, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return "", nil, err
	}
	if len(items) == 0 {
		return "", nil, nil
	}
	info, err := s.tableInfo(ctx, queue)
	if err != nil {
		return "", nil, err
	}
	c := newClaimColumns(len(items))
	f := newFailureColumns(len(items), s.textFit(ctx))
	for _, it := range items {
		cl := Claim{MsgID: it.MsgID, ReadCount: it.ReadCount, EnqueuedAt: it.EnqueuedAt}
		if err := validateClaim("discard in", queue, cl); err != nil {
			return "", nil, err
		}
		c.add(cl)
		f.add(it.Failure)
	}
	cols := "msg_id, read_ct, enqueued_at, vt, message"
	if info.archiveHasLastReadAt && info.queueHasLastReadAt {
		cols += ", last_read_at"
	}
	onConflict, result := "", `SELECT msg_id FROM a`
	if keepOlder {
		onConflict, result = `
			ON CONFLICT DO NOTHING`, `SELECT d.msg_id, a.msg_id IS NOT NULL FROM d LEFT JOIN a ON a.msg_id = d.msg_id`
	}
	sql := `WITH t AS (
			SELECT * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::timestamptz[])
				AS t(id, attempt, kind, class, message, backtrace, detail, claim_ct, claim_enq)
		), ` + lockInOrderSQL(queueTable(queue), "q.msg_id = ANY($2::bigint[])", "UPDATE") + `, d AS (
			DELETE FROM ` + queueTable(queue) + ` q USING t WHERE q.msg_id = t.id AND ` + sqlClaimed + ` AND ` + sqlLocked + `
			RETURNING q.*
		), a AS (
			INSERT INTO ` + archiveTable(queue) + ` (` + cols + `, headers)
			SELECT ` + cols + `, ` + mergeHeaderSQL("d.headers", `'`+HeaderDiscarded+`'`, "'true'::jsonb") + ` FROM d` + onConflict + `
			RETURNING msg_id
		), f AS (
			INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message, backtrace, detail)
			SELECT $1, t.id, t.attempt, t.kind, t.class, t.message, t.backtrace, t.detail::jsonb
			FROM t JOIN a ON a.msg_id = t.id
		)
		` + result
	return sql, []any{queue, c.ids, f.attempts, f.kinds, f.classes, f.messages, f.backtraces, f.details, c.reads, c.enqs}, nil
}

// mergeHeaderSQL returns SQL that adds key = value to a headers column,
// keeping headers that are not a JSON object under pgbus_original_headers.
func mergeHeaderSQL(headers, key, value string) string {
	return `CASE
		WHEN ` + headers + ` IS NULL OR jsonb_typeof(` + headers + `) = 'null' THEN jsonb_build_object(` + key + `, ` + value + `)
		WHEN jsonb_typeof(` + headers + `) = 'object' THEN ` + headers + ` || jsonb_build_object(` + key + `, ` + value + `)
		ELSE jsonb_build_object('` + HeaderOriginalHeaders + `', ` + headers + `, ` + key + `, ` + value + `)
	END`
}

// failureColumns lays out failures as parallel arrays for unnest.
type failureColumns struct {
	fit                                  textFit
	attempts                             []int32
	kinds, classes, messages, backtraces []string
	details                              []*string
}

func newFailureColumns(n int, fit textFit) *failureColumns {
	return &failureColumns{
		fit:      fit,
		attempts: make([]int32, 0, n), kinds: make([]string, 0, n), classes: make([]string, 0, n),
		messages: make([]string, 0, n), backtraces: make([]string, 0, n), details: make([]*string, 0, n),
	}
}

func (c *failureColumns) add(f Failure) {
	f = f.bounded(c.fit)
	c.attempts = append(c.attempts, int32(f.Attempt))
	c.kinds = append(c.kinds, f.Kind)
	c.classes = append(c.classes, f.ErrorClass)
	c.messages = append(c.messages, f.ErrorMessage)
	c.backtraces = append(c.backtraces, f.Backtrace)
	c.details = append(c.details, f.Detail.json())
}
