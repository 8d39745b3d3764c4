package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Dead-letter sources, the block's "source" key.
const (
	SourceWorker   = "worker"
	SourceConsumer = "consumer"
)

// DeadLetterBlockVersion is the "version" key of the blocks this code writes.
const DeadLetterBlockVersion = 1

// DeadLetterItem is one message to move to its dead-letter queue.
type DeadLetterItem struct {
	MsgID int64
	// Reason is ReasonMaxRetriesExceeded, ReasonNonRetryable or
	// ReasonDeadlineExceeded.
	Reason string
	// MaxRetries is the max_retries in force when the message was routed.
	MaxRetries int
	// Failure is the failure that ends the message, recorded in the same
	// transaction; nil when there is none (routing at read time, deadline).
	Failure *Failure
	// ReadCount and EnqueuedAt are those of the read that ends the
	// message, as in Claim: it moves only while it is still at that read.
	// ReadCount 0 moves the message at any read.
	ReadCount  int
	EnqueuedAt time.Time
}

// DeadLettered pairs a dead-lettered message's id in its source queue with
// its id in the dead-letter queue.
type DeadLettered struct {
	SourceMsgID int64 `json:"source_msg_id"`
	DLQMsgID    int64 `json:"dlq_msg_id"`
}

// DeadLetterMany moves messages of physical queue queue into dlq in one
// statement, so all of them move or none: it records the failures given,
// inserts each DLQ copy with its dead-letter block (the pgbus_dead_letter
// header), deletes the originals, and re-keys each message's failure history
// to its new (dlq, msg_id). Ids not in queue, or no longer at the read their
// item names, are skipped, not an error: another worker may have finished
// them or hold them now. source is SourceWorker or
// SourceConsumer. The result is ordered by source id.
func (s *Store) DeadLetterMany(ctx context.Context, queue, dlq, source string, items []DeadLetterItem) ([]DeadLettered, error) {
	return settled(ctx, func() ([]DeadLettered, error) {
		return deadLetterWith(ctx, s.db, s.textFit(ctx), queue, dlq, source, items)
	})
}

func deadLetterWith(ctx context.Context, db querier, fit textFit, queue, dlq, source string, items []DeadLetterItem) ([]DeadLettered, error) {
	args, err := deadLetterArgs(fit, queue, dlq, source, items)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, deadLetterSQL(queue, dlq), args...)
	if err != nil {
		return nil, deadLetterErr(ctx, db, err, queue, dlq)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DeadLettered])
	if err != nil {
		return nil, deadLetterErr(ctx, db, err, queue, dlq)
	}
	slices.SortFunc(out, func(a, b DeadLettered) int { return cmp.Compare(a.SourceMsgID, b.SourceMsgID) })
	return out, nil
}

func validateDeadLetter(queue, dlq, source string, n int) error {
	if err := ValidatePhysicalName(queue); err != nil {
		return err
	}
	if err := ValidatePhysicalName(dlq); err != nil {
		return err
	}
	if queue == dlq {
		return invalidf("dead-letter %q: the dead-letter queue must differ from the source queue", queue)
	}
	if source != SourceWorker && source != SourceConsumer {
		return invalidf("dead-letter from %q: source %q is unknown; use %q or %q", queue, source, SourceWorker, SourceConsumer)
	}
	if n == 0 || n > MaxBatch {
		return invalidf("dead-letter from %q: pass 1 to %d messages, not %d", queue, MaxBatch, n)
	}
	return nil
}

// deadLetterArgs checks the call and turns the items into the parallel arrays
// the statement unnests; nothing is sent when any item is bad.
func deadLetterArgs(fit textFit, queue, dlq, source string, items []DeadLetterItem) ([]any, error) {
	if err := validateDeadLetter(queue, dlq, source, len(items)); err != nil {
		return nil, err
	}
	n := len(items)
	ids, maxRetries, attempts, reads := make([]int64, n), make([]int32, n), make([]int32, n), make([]int32, n)
	enqs := make([]time.Time, n)
	reasons := make([]string, n)
	kinds, classes, messages, traces := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	details := make([]*string, n)
	seen := make(map[int64]bool, n)
	for i, it := range items {
		if err := validateDeadLetterItem(queue, it, seen); err != nil {
			return nil, err
		}
		ids[i], reasons[i], maxRetries[i] = it.MsgID, it.Reason, int32(it.MaxRetries)
		reads[i], enqs[i] = int32(it.ReadCount), it.EnqueuedAt
		if it.Failure != nil {
			f := it.Failure.bounded(fit)
			attempts[i] = int32(f.Attempt)
			kinds[i], classes[i], messages[i], traces[i] = &f.Kind, &f.ErrorClass, &f.ErrorMessage, &f.Backtrace
			details[i] = f.Detail.json()
		}
	}
	return []any{ids, reasons, maxRetries, attempts, kinds, classes, messages, traces, queue, dlq, source, details, reads, enqs}, nil
}

func validateDeadLetterItem(queue string, it DeadLetterItem, seen map[int64]bool) error {
	if it.MsgID <= 0 {
		return invalidf("dead-letter from %q: message id %d is not valid; ids are positive", queue, it.MsgID)
	}
	if seen[it.MsgID] {
		return invalidf("dead-letter from %q: message %d is listed twice; pass each message once", queue, it.MsgID)
	}
	seen[it.MsgID] = true
	if err := validateDeadReason(it.Reason); err != nil {
		return err
	}
	if err := validateClaim("dead-letter from", queue, Claim{MsgID: it.MsgID, ReadCount: it.ReadCount}); err != nil {
		return err
	}
	if it.MaxRetries < 0 || it.MaxRetries > math.MaxInt32 {
		return invalidf("dead-letter message %d: max_retries %d is out of range", it.MsgID, it.MaxRetries)
	}
	if it.Failure != nil && (it.Failure.Attempt < 0 || it.Failure.Attempt > math.MaxInt32) {
		return invalidf("dead-letter message %d: failure attempt %d is out of range", it.MsgID, it.Failure.Attempt)
	}
	return nil
}

func validateDeadReason(r string) error {
	switch r {
	case ReasonMaxRetriesExceeded, ReasonNonRetryable, ReasonDeadlineExceeded:
		return nil
	}
	return invalidf("dead-letter reason %q is unknown; use %s, %s or %s", shorten(r), ReasonMaxRetriesExceeded, ReasonNonRetryable, ReasonDeadlineExceeded)
}

// SQL pieces shared by the dead-letter statements. They mirror
// BlockErrorMessage and BlockBacktrace so that a block built in SQL from a
// failure row reads the same as one cut in Go.
const (
	sqlDeadISOFormat = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`
	// sqlDeadKind is a row's job kind: pgbus_kind, or job_class for messages
	// written by Ruby pgbus. ->> yields NULL on non-objects, never an error.
	sqlDeadKind = `coalesce(headers->>'pgbus_kind', message->>'job_class')`
)

func sqlDeadISO(expr string) string {
	return `to_char((` + expr + `) AT TIME ZONE 'UTC', ` + sqlDeadISOFormat + `)`
}

// sqlCutMark is the ellipsis that marks a cut, or three dots where the
// database's encoding has no ellipsis: the character is made at run time,
// as a literal '…' in the statement's text made PostgreSQL refuse the
// whole statement in such a database, whether it cut anything or not.
const sqlCutMark = `(CASE WHEN getdatabaseencoding() = 'UTF8' THEN convert_from(decode('e280a6', 'hex'), 'UTF8') ELSE '...' END)`

func sqlDeadTruncate(expr string, max int) string {
	return fmt.Sprintf(`(CASE WHEN char_length(%[1]s) <= %[2]d THEN %[1]s ELSE left(%[1]s, %[3]d) || `+sqlCutMark+` END)`, expr, max, max-1)
}

func sqlDeadBacktrace(expr string) string {
	lines := fmt.Sprintf(`array_to_string((string_to_array(%s, E'\n'))[1:%d], E'\n')`, expr, BlockBacktraceMaxLines)
	return `nullif(` + sqlDeadTruncate(lines, BlockBacktraceMax) + `, '')`
}

// deadLetterSQL builds the one statement of DeadLetterMany. The block's
// error keys are the last failure of the trip that ends, since the message
// was sent or last retried out of a DLQ (its enqueued_at): the failures of
// earlier trips follow the message, and one of them, taken for this trip's,
// would blame a death on what an earlier retry may have fixed. A trip that
// recorded none keeps the last earlier one as previous_trip_error.
// recorded_attempts counts the trip's attempts that recorded a failure. The DLQ copy
// carries its source id in its block, so the rows returned by the insert
// tell which failure rows to re-key without a second round trip. Data-
// modifying CTEs all run to completion, read or not.
//
// Parameters: $1..$8 and $12..$14 per-item arrays, $9 queue, $10 dlq, $11
// source.
func deadLetterSQL(queue, dlq string) string {
	block := `jsonb_strip_nulls(jsonb_build_object(
		'version', ` + fmt.Sprint(DeadLetterBlockVersion) + `,
		'reason', m.reason,
		'source', $11::text,
		'source_queue', $9::text,
		'source_msg_id', m.msg_id,
		'source_enqueued_at', ` + sqlDeadISO("m.enqueued_at") + `,
		'attempts', m.read_ct,
		'max_retries', m.max_retries,
		'dead_lettered_at', ` + sqlDeadISO("now()") + `,
		'retries_from_dlq', CASE WHEN jsonb_typeof(m.headers) = 'object' THEN m.headers->'pgbus_dlq_retries' END,
		'error_class', lf.error_class,
		'error_message', ` + sqlDeadTruncate("lf.error_message", BlockErrorMessageMax) + `,
		'backtrace', ` + sqlDeadBacktrace("lf.backtrace") + `,
		'error_attempt', lf.attempt,
		'error_recorded_at', ` + sqlDeadISO("lf.at") + `,
		'recorded_attempts', rc.n,
		'previous_trip_error', CASE WHEN pf.error_class IS NOT NULL THEN jsonb_build_object(
			'error_class', pf.error_class,
			'error_message', ` + sqlDeadTruncate("pf.error_message", BlockErrorMessageMax) + `,
			'error_attempt', pf.attempt,
			'error_recorded_at', ` + sqlDeadISO("pf.failed_at") + `) END))`
	headers := `CASE WHEN jsonb_typeof(m.headers) = 'object' THEN m.headers
			WHEN m.headers IS NULL OR jsonb_typeof(m.headers) = 'null' THEN '{}'::jsonb
			ELSE jsonb_build_object('` + HeaderOriginalHeaders + `', m.headers) END
		|| jsonb_build_object('` + HeaderDeadLetter + `', ` + block + `)`
	return `WITH items AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $12::text[], $13::int[], $14::timestamptz[])
			AS t(msg_id, reason, max_retries, attempt, kind, error_class, error_message, backtrace, detail, claim_ct, claim_enq)
	), ` + lockInOrderSQL(queueTable(queue), "q.msg_id = ANY($1::bigint[])", "UPDATE") + `, m AS (
		DELETE FROM ` + queueTable(queue) + ` q USING items t WHERE q.msg_id = t.msg_id AND ` + sqlClaimed + ` AND ` + sqlLocked + `
		RETURNING q.msg_id, q.read_ct, q.enqueued_at, q.message, q.headers, t.reason, t.max_retries
	), ins AS (
		INSERT INTO ` + queueTable(dlq) + ` (vt, message, headers)
		SELECT now(), m.message, ` + headers + `
		FROM m JOIN items i ON i.msg_id = m.msg_id
		LEFT JOIN LATERAL (
			SELECT i.attempt, i.error_class, i.error_message, i.backtrace, now() AS at
			WHERE i.error_class IS NOT NULL
			UNION ALL
			(SELECT f.attempt, f.error_class, f.error_message, f.backtrace, f.failed_at
			 FROM pgbus.failures f
			 WHERE i.error_class IS NULL AND f.queue_name = $9::text AND f.msg_id = m.msg_id
			   AND f.error_class <> '` + PayloadReplacedClass + `' AND f.failed_at >= m.enqueued_at
			 ORDER BY f.id DESC LIMIT 1)
		) lf ON true
		LEFT JOIN LATERAL (
			SELECT f.attempt, f.error_class, f.error_message, f.failed_at
			FROM pgbus.failures f
			WHERE lf.error_class IS NULL AND f.queue_name = $9::text AND f.msg_id = m.msg_id
			  AND f.error_class <> '` + PayloadReplacedClass + `' AND f.failed_at < m.enqueued_at
			ORDER BY f.id DESC LIMIT 1
		) pf ON true
		CROSS JOIN LATERAL (
			SELECT count(DISTINCT t.attempt) AS n FROM (
				SELECT i.attempt WHERE i.error_class IS NOT NULL
				UNION ALL
				SELECT f.attempt FROM pgbus.failures f
				WHERE f.queue_name = $9::text AND f.msg_id = m.msg_id
				  AND f.error_class <> '` + PayloadReplacedClass + `' AND f.failed_at >= m.enqueued_at
			) t WHERE t.attempt BETWEEN 1 AND m.read_ct
		) rc
		RETURNING msg_id, (headers->'` + HeaderDeadLetter + `'->>'source_msg_id')::bigint AS src
	), newf AS (
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message, backtrace, detail)
		SELECT $10::text, ins.msg_id, i.attempt, i.kind, i.error_class, i.error_message, i.backtrace, i.detail::jsonb
		FROM ins JOIN items i ON i.msg_id = ins.src
		WHERE i.error_class IS NOT NULL
	), rekey AS (
		-- The failures are found by id, each message's looked up in the
		-- (queue_name, msg_id) index (OFFSET 0 keeps the lookup per
		-- message): found by the join alone, statistics that saw no
		-- failures of the queue (just after a bulk retry moved them back,
		-- or a burst of first failures) planned a scan of all its
		-- failures for each message, seconds per batch of 200.
		UPDATE pgbus.failures f SET queue_name = $10::text, msg_id = ins.msg_id
		FROM ins WHERE f.msg_id = ins.src AND f.id = ANY(ARRAY(SELECT x.id FROM ins CROSS JOIN LATERAL (
			SELECT id FROM pgbus.failures WHERE queue_name = $9::text AND msg_id = ins.src OFFSET 0) x))
	)
	SELECT src, msg_id FROM ins`
}

// deadLetterErr names both queues when one of them is missing, since the
// server's error does not say which.
//
// A missing relation is named from the catalog, as db sees it: PostgreSQL
// names it only in its message, which lc_messages translates. Besides the
// two queues', the statement writes pgbus's failure history, which a
// dropped pgbus schema takes with it.
func deadLetterErr(ctx context.Context, db querier, err error, queue, dlq string) error {
	if !isUndefinedTable(err) {
		return fmt.Errorf("store: dead-letter from %q to %q: %w", queue, dlq, err)
	}
	var from, to, history bool
	rows, cerr := db.Query(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, to_regclass('pgbus.failures') IS NOT NULL`,
		queueTable(queue), queueTable(dlq))
	if cerr == nil {
		_, cerr = pgx.ForEachRow(rows, []any{&from, &to, &history}, func() error { return nil })
	}
	switch {
	case cerr != nil:
		return notFoundf("dead-letter from %q to %q: a table it writes does not exist (one of the two queues, or pgbus's failure history): create the queue (it makes its DLQ too), or migrate the database with this version of pgbus if its schema went", queue, dlq)
	case !from || !to:
		return notFoundf("dead-letter from %q to %q: one of the two queues does not exist; create the queue (it makes its DLQ too)", queue, dlq)
	case !history:
		return &kindError{kind: ErrSchemaMissing, msg: fmt.Sprintf("dead-letter from %q to %q: pgbus's failure history (pgbus.failures) does not exist: the pgbus schema was dropped or never made; migrate the database with this version of pgbus", queue, dlq)}
	}
	return fmt.Errorf("store: dead-letter from %q to %q: %w", queue, dlq, err)
}

// FailureHistory returns the recorded failures of the message that is now
// msgID in physical queue queue, oldest first. Rows are ordered by when they
// were recorded (their id), not by attempt: a message retried out of a DLQ
// starts counting attempts again, and its trips must not interleave.
func (s *Store) FailureHistory(ctx context.Context, queue string, msgID int64) ([]FailureRecord, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if msgID <= 0 {
		return nil, invalidf("failure history of %q: message id %d is not valid; ids are positive", queue, msgID)
	}
	rows, err := s.reads.Query(ctx, `
		SELECT id, queue_name, msg_id, failed_at, attempt, kind, error_class, error_message, backtrace, detail
		FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2 ORDER BY id`, queue, msgID)
	if err != nil {
		return nil, fmt.Errorf("store: failure history of message %d in %q: %w", msgID, queue, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FailureRecord, error) {
		var f FailureRecord
		var detail []byte
		err := r.Scan(&f.ID, &f.Queue, &f.MsgID, &f.FailedAt, &f.Attempt, &f.Kind, &f.ErrorClass, &f.ErrorMessage, &f.Backtrace, &detail)
		f.Detail = parseDetail(detail)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: failure history of message %d in %q: %w", msgID, queue, err)
	}
	return out, nil
}
