package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Limits of the dead-letter operations.
const (
	// MaxDeadPage is the largest page ListDead returns.
	MaxDeadPage = 100
	// MaxDeadBulk bounds one RetryDeadMatching or DiscardDeadMatching call.
	MaxDeadBulk = 100_000
	// MaxDeadFilterText bounds DeadFilter.Text, in characters.
	MaxDeadFilterText = 1000
	// MaxDeadFilterName bounds DeadFilter.Kind and ErrorClass, in characters;
	// the history keeps no longer ones, so a longer filter could never match.
	MaxDeadFilterName = 200
	// MaxRetryMoved bounds RetryReport.Moved; the rest are only counted.
	MaxRetryMoved = 100

	deadBatch  = 500  // messages per page of a bulk operation
	retryLanes = 4    // connections one retry call uses at most
	purgeBatch = 1000 // archived rows deleted per statement by PurgeDead

	// PayloadReplacedClass is the error class of the history row that records
	// a retry with a corrected payload.
	PayloadReplacedClass = "pgbus.payload_replaced"
)

// DeadFilter selects dead messages. Zero fields select everything.
type DeadFilter struct {
	// Queue is the source queue X, meaning its DLQ X_dlq; "X_dlq" is accepted
	// too. Empty: every DLQ.
	Queue string `json:"queue,omitempty" jsonschema_description:"Queue whose DLQ to read (orders or orders_dlq); empty for every DLQ"`
	// Kind matches the pgbus_kind header, or message.job_class for messages
	// written by Ruby pgbus.
	Kind string `json:"kind,omitempty" jsonschema_description:"Job kind (the pgbus_kind header or a Ruby job_class)"`
	// ErrorClass and Reason match the dead-letter block exactly.
	ErrorClass string `json:"error_class,omitempty" jsonschema_description:"Error class of the last failure; exact match"`
	Reason     string `json:"reason,omitempty" jsonschema:"enum=max_retries_exceeded,enum=non_retryable_error,enum=deadline_exceeded"`
	// Since (inclusive) and Until (exclusive) bound the dead-letter time.
	Since time.Time `json:"since,omitzero" jsonschema_description:"Dead-lettered at or after this time (RFC 3339)"`
	Until time.Time `json:"until,omitzero" jsonschema_description:"Dead-lettered before this time (RFC 3339)"`
	// Text is a case-insensitive substring of the block's error message.
	Text string `json:"text,omitempty" jsonschema_description:"Case-insensitive text in the error message; at most 1000 characters"`
}

// DeadLetterBlock is the pgbus_dead_letter header of a dead message
// (DESIGN.md section 6).
type DeadLetterBlock struct {
	Version          int       `json:"version"`
	Reason           string    `json:"reason" jsonschema:"enum=max_retries_exceeded,enum=non_retryable_error,enum=deadline_exceeded"`
	Source           string    `json:"source" jsonschema:"enum=worker,enum=consumer"`
	SourceQueue      string    `json:"source_queue" jsonschema_description:"Physical queue the message died in (a priority sub-queue included)"`
	SourceMsgID      int64     `json:"source_msg_id" jsonschema_description:"Its id in the source queue"`
	SourceEnqueuedAt time.Time `json:"source_enqueued_at,omitzero"`
	Attempts         int       `json:"attempts" jsonschema_description:"Deliveries when it was routed (read_ct)"`
	MaxRetries       int       `json:"max_retries"`
	DeadLetteredAt   time.Time `json:"dead_lettered_at,omitzero"`
	RetriesFromDLQ   int       `json:"retries_from_dlq,omitempty" jsonschema_description:"Trips out of a DLQ before this death"`
	ErrorClass       string    `json:"error_class,omitempty" jsonschema_description:"Class of the last recorded failure; absent when none was recorded (a crash)"`
	ErrorMessage     string    `json:"error_message,omitempty" jsonschema_description:"Its message; at most 1000 characters"`
	Backtrace        string    `json:"backtrace,omitempty" jsonschema_description:"Its first 10 lines of backtrace"`
	ErrorAttempt     int       `json:"error_attempt,omitempty"`
	ErrorRecordedAt  time.Time `json:"error_recorded_at,omitzero"`
}

// DeadItem is one dead message as ListDead shows it: its block's facts,
// without payload or backtrace (ShowDead returns those).
type DeadItem struct {
	DLQ            string    `json:"dlq" jsonschema_description:"Dead-letter queue holding the message"`
	MsgID          int64     `json:"msg_id" jsonschema_description:"Its id in the DLQ: pass it with dlq to show or retry it"`
	Kind           string    `json:"kind,omitempty"`
	Reason         string    `json:"reason" jsonschema:"enum=max_retries_exceeded,enum=non_retryable_error,enum=deadline_exceeded"`
	SourceQueue    string    `json:"source_queue"`
	SourceMsgID    int64     `json:"source_msg_id"`
	Attempts       int       `json:"attempts"`
	MaxRetries     int       `json:"max_retries"`
	ErrorClass     string    `json:"error_class,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty" jsonschema_description:"Last error message; at most 1000 characters"`
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
	RetriesFromDLQ int       `json:"retries_from_dlq" jsonschema_description:"Trips out of a DLQ before this death"`
	PayloadBytes   int64     `json:"payload_bytes"`
}

// DeadPage is one page of ListDead. NextCursor is empty on the last page.
type DeadPage struct {
	Items      []DeadItem `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor with the same filters for the next page; absent on the last page"`
}

// DeadMessage is one dead message in full.
type DeadMessage struct {
	DLQ            string          `json:"dlq"`
	MsgID          int64           `json:"msg_id"`
	Kind           string          `json:"kind,omitempty"`
	ReadCount      int             `json:"read_ct" jsonschema_description:"Reads of the DLQ row itself (by pgmq.read); not the attempts"`
	DeadLetteredAt time.Time       `json:"dead_lettered_at"`
	Payload        json.RawMessage `json:"payload"`
	// Headers are the row's headers as stored, the block included.
	Headers json.RawMessage `json:"headers"`
	// Block is nil for a message put in the DLQ by something else than
	// pgbus (a plain pgmq.send).
	Block   *DeadLetterBlock `json:"dead_letter,omitempty"`
	History []FailureRecord  `json:"history" jsonschema_description:"Every recorded failure of the message across its trips; oldest first"`
}

// DeadGroup counts the dead messages of one (source queue, kind, error
// class).
type DeadGroup struct {
	DLQ          string    `json:"dlq"`
	SourceQueue  string    `json:"source_queue"`
	Kind         string    `json:"kind"`
	ErrorClass   string    `json:"error_class" jsonschema_description:"Empty when no failure was recorded (the worker crashed)"`
	Count        int64     `json:"count"`
	FirstDeadAt  time.Time `json:"first_dead_lettered_at"`
	LastDeadAt   time.Time `json:"last_dead_lettered_at"`
	Reasons      []string  `json:"reasons"`
	SampleMsgIDs []int64   `json:"sample_msg_ids" jsonschema_description:"Up to 5 ids in dlq; newest first"`
}

// RetryOptions tune RetryDead and RetryDeadMatching.
type RetryOptions struct {
	// DryRun reports what would move and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Payload, with exactly one id, retries the message with this payload
	// instead of its own. The original message is kept in the DLQ's archive
	// and the replacement noted in its failure history.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Progress, when set, is called after each batch with the messages done
	// so far and the total expected.
	Progress func(done, total int) `json:"-"`
}

// RetryReport tells what a retry did (or, in a dry run, would do).
type RetryReport struct {
	DryRun     bool   `json:"dry_run"`
	Retried    int    `json:"retried" jsonschema_description:"Messages moved back (in a dry run: that would move)"`
	Failed     int    `json:"failed" jsonschema_description:"Messages left in their DLQ"`
	FirstError string `json:"first_error,omitempty"`
	// Moved lists the first MaxRetryMoved messages retried; MovedOmitted
	// counts the others.
	Moved        []RetriedMessage `json:"moved" jsonschema_description:"The first 100 messages moved"`
	MovedOmitted int              `json:"moved_omitted,omitempty" jsonschema_description:"Messages moved but not listed in moved"`
	// Failures lists the first MaxRetryMoved messages that failed.
	Failures []RetryFailure `json:"failures,omitempty"`

	firstErr error
}

// RetryFailure is one message a retry left in its DLQ, and why. NotFound
// is set when the message was no longer there.
type RetryFailure struct {
	DLQ      string `json:"dlq"`
	DLQMsgID int64  `json:"dlq_msg_id"`
	Error    string `json:"error"`
	NotFound bool   `json:"not_found,omitempty"`
}

// RetriedMessage is one message moved out of a DLQ. MsgID is its new id in
// Queue; zero in a dry run.
type RetriedMessage struct {
	DLQ      string `json:"dlq"`
	DLQMsgID int64  `json:"dlq_msg_id"`
	Queue    string `json:"queue" jsonschema_description:"Queue it went back to"`
	MsgID    int64  `json:"msg_id,omitempty" jsonschema_description:"Its new id there; absent in a dry run"`
}

func (r *RetryReport) moved(m RetriedMessage) {
	r.Retried++
	if len(r.Moved) < MaxRetryMoved {
		r.Moved = append(r.Moved, m)
	} else {
		r.MovedOmitted++
	}
}

func (r *RetryReport) fail(dlq string, id int64, err error) {
	r.Failed++
	if len(r.Failures) < MaxRetryMoved {
		r.Failures = append(r.Failures, RetryFailure{DLQ: dlq, DLQMsgID: id, Error: err.Error(), NotFound: errors.Is(err, ErrNotFound)})
	}
	if r.firstErr == nil {
		r.firstErr = err
		r.FirstError = fmt.Sprintf("message %d in %s: %v", id, dlq, err)
	}
}

// ---- names ----

var deadSubQueueSuffix = regexp.MustCompile(`_p[0-9]+$`)

// deadDLQOf turns a queue or DLQ name into the DLQ name, validated.
func deadDLQOf(name string) (string, error) {
	if err := ValidatePhysicalName(name); err != nil {
		return "", err
	}
	dlq := name
	if !strings.HasSuffix(name, DLQSuffix) {
		dlq = DLQName(name)
	}
	if err := ValidatePhysicalName(dlq); err != nil {
		return "", err
	}
	return dlq, nil
}

func deadBaseOf(dlq string) string { return strings.TrimSuffix(dlq, DLQSuffix) }

// resolveDLQ is deadDLQOf plus a check that the DLQ exists.
func (s *Store) resolveDLQ(ctx context.Context, name string) (string, error) {
	dlq, err := deadDLQOf(name)
	if err != nil {
		return "", err
	}
	existing, err := s.deadExistingQueues(ctx, []string{dlq})
	if err != nil {
		return "", err
	}
	if len(existing) == 0 {
		return "", dlqMissingErr(dlq)
	}
	return dlq, nil
}

func dlqMissingErr(dlq string) error {
	base := deadBaseOf(dlq)
	if m := deadSubQueueSuffix.FindString(base); m != "" {
		return notFoundf("%q is a priority sub-queue; its messages die in the DLQ of queue %q: pass queue %q", base, strings.TrimSuffix(base, m), strings.TrimSuffix(base, m))
	}
	return notFoundf("queue %q has no dead-letter queue %q; see pgbus queues for the queues there are", base, dlq)
}

// deadExistingQueues returns those of names whose PGMQ queue table exists. It
// asks the catalog each time: another process may have dropped a queue.
func (s *Store) deadExistingQueues(ctx context.Context, names []string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT n FROM unnest($1::text[]) AS n
		WHERE to_regclass(format('%I.%I', 'pgmq', 'q_' || n)) IS NOT NULL`, names)
	if err != nil {
		return nil, fmt.Errorf("store: look up queues: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: look up queues: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, n := range found {
		out[n] = true
	}
	return out, nil
}

// deadQueues lists every DLQ: the PGMQ queues whose name ends in _dlq.
// Operations over all DLQs read them in one statement, so one table that
// statement cannot read would fail them all: tables without a headers
// column (PGMQ before 1.5) or that this role may not read are left out.
func (s *Store) deadQueues(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT m.queue_name FROM pgmq.meta m
		JOIN pg_class c ON c.oid = to_regclass(format('%I.%I', 'pgmq', 'q_' || m.queue_name))
		WHERE m.queue_name LIKE E'%\\_dlq'
		  AND has_table_privilege(c.oid, 'SELECT')
		  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'headers' AND NOT a.attisdropped)
		ORDER BY m.queue_name`)
	if err != nil {
		return nil, fmt.Errorf("store: list dead-letter queues: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: list dead-letter queues: %w", err)
	}
	// Other PGMQ clients may use names our rules do not allow; leave them.
	return slices.DeleteFunc(names, func(n string) bool { return ValidatePhysicalName(n) != nil }), nil
}

// isUndefinedTable tells whether err is PostgreSQL's "relation does not
// exist": a queue dropped, or never made.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

func deadGoneErr(dlq string, id int64) error {
	base := deadBaseOf(dlq)
	return notFoundf("queue %q has no DLQ message %d; it may have been retried or discarded already: see pgbus dlq list --queue %s", base, id, base)
}

// ---- filters ----

func (f DeadFilter) validate() error {
	if f.Queue != "" {
		if _, err := deadDLQOf(f.Queue); err != nil {
			return err
		}
	}
	texts := []struct {
		name, value string
		max         int
	}{{"kind", f.Kind, MaxDeadFilterName}, {"error_class", f.ErrorClass, MaxDeadFilterName}, {"text", f.Text, MaxDeadFilterText}}
	for _, t := range texts {
		if !utf8.ValidString(t.value) || strings.ContainsRune(t.value, 0) {
			return invalidf("filter %s is not valid UTF-8 text; pass plain text", t.name)
		}
		if n := utf8.RuneCountInString(t.value); n > t.max {
			return invalidf("filter %s is %d characters; at most %d are allowed: pass a shorter, distinctive part", t.name, n, t.max)
		}
	}
	if f.Reason != "" {
		if err := validateDeadReason(f.Reason); err != nil {
			return invalidf("filter reason %q is unknown; use %s, %s or %s", shorten(f.Reason), ReasonMaxRetriesExceeded, ReasonNonRetryable, ReasonDeadlineExceeded)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return invalidf("filter until (%s) must be after since (%s)", f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	return nil
}

// fingerprint identifies a filter, so that a cursor is only used with the
// filter it was issued for.
func (f DeadFilter) fingerprint() string {
	if f.Queue != "" {
		f.Queue, _ = deadDLQOf(f.Queue)
	}
	f.Since, f.Until = f.Since.UTC(), f.Until.UTC()
	b, _ := json.Marshal(f)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// deadEscapeLike makes s match itself in a LIKE pattern with ESCAPE '\'.
func deadEscapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// deadQuery is a filter compiled to SQL over a set of DLQs: the same
// conditions apply to each DLQ's table, with values as parameters.
type deadQuery struct {
	dlqs  []string
	conds []string
	args  []any
}

func (q *deadQuery) arg(v any) string {
	q.args = append(q.args, v)
	return fmt.Sprintf("$%d", len(q.args))
}

const sqlDeadBlock = `(headers->'` + HeaderDeadLetter + `')`

func (s *Store) compileDead(ctx context.Context, f DeadFilter) (*deadQuery, error) {
	q := &deadQuery{}
	var err error
	if f.Queue != "" {
		dlq, err := s.resolveDLQ(ctx, f.Queue)
		if err != nil {
			return nil, err
		}
		q.dlqs = []string{dlq}
	} else if q.dlqs, err = s.deadQueues(ctx); err != nil {
		return nil, err
	}
	add := func(cond string, v any) { q.conds = append(q.conds, fmt.Sprintf(cond, q.arg(v))) }
	if f.Kind != "" {
		add(sqlDeadKind+` = %s`, f.Kind)
	}
	if f.ErrorClass != "" {
		add(sqlDeadBlock+`->>'error_class' = %s`, f.ErrorClass)
	}
	if f.Reason != "" {
		add(sqlDeadBlock+`->>'reason' = %s`, f.Reason)
	}
	if !f.Since.IsZero() {
		add(`enqueued_at >= %s`, f.Since)
	}
	if !f.Until.IsZero() {
		add(`enqueued_at < %s`, f.Until)
	}
	if f.Text != "" {
		add(sqlDeadBlock+`->>'error_message' ILIKE %s ESCAPE E'\\'`, "%"+deadEscapeLike(f.Text)+"%")
	}
	return q, nil
}

// union returns one SELECT per DLQ, joined by UNION ALL. Each selects the
// DLQ's name as column dlq, then cols; more adds a condition that may depend
// on the DLQ; tail follows the WHERE clause.
func (q *deadQuery) union(cols string, more func(dlq string) string, tail string) string {
	parts := make([]string, len(q.dlqs))
	for i, dlq := range q.dlqs {
		conds := slices.Clone(q.conds)
		if more != nil {
			if c := more(dlq); c != "" {
				conds = append(conds, c)
			}
		}
		where := ""
		if len(conds) > 0 {
			where = " WHERE " + strings.Join(conds, " AND ")
		}
		parts[i] = "(SELECT " + q.arg(dlq) + "::text AS dlq, " + cols + " FROM " + queueTable(dlq) + where + " " + tail + ")"
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

// runDead compiles f and runs fn on it. Over every DLQ, a DLQ dropped in the
// meantime makes it list the DLQs again, once.
func (s *Store) runDead(ctx context.Context, f DeadFilter, fn func(q *deadQuery) error) error {
	for attempt := 0; ; attempt++ {
		q, err := s.compileDead(ctx, f)
		if err != nil {
			return err
		}
		if len(q.dlqs) == 0 {
			return nil
		}
		err = fn(q)
		if !isUndefinedTable(err) {
			return err
		}
		if f.Queue != "" {
			return dlqMissingErr(q.dlqs[0])
		}
		if attempt > 0 {
			return fmt.Errorf("store: dead-letter queues changed while reading them; try again: %w", err)
		}
	}
}

// ---- cursors ----

// deadCursor is a position in the order (enqueued_at, dlq, msg_id).
type deadCursor struct {
	V int       `json:"v"`
	T time.Time `json:"t"`
	Q string    `json:"q"`
	I int64     `json:"i"`
	F string    `json:"f"`
	C string    `json:"c"`
}

const deadCursorVersion = 1

func (c deadCursor) sum() string {
	h := sha256.Sum256(fmt.Appendf(nil, "pgbus dead cursor|%d|%s|%s|%d|%s", c.V, c.T.UTC().Format(time.RFC3339Nano), c.Q, c.I, c.F))
	return hex.EncodeToString(h[:8])
}

func encodeDeadCursor(it DeadItem, filter string) string {
	c := deadCursor{V: deadCursorVersion, T: it.DeadLetteredAt.UTC(), Q: it.DLQ, I: it.MsgID, F: filter}
	c.C = c.sum()
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeDeadCursor(s, filter string) (*deadCursor, error) {
	bad := invalidf("cursor is not one this server issued; start again without cursor")
	if len(s) > 1024 {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c deadCursor
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if dec.Decode(&c) != nil || dec.Decode(&struct{}{}) != io.EOF || c.V != deadCursorVersion || c.C != c.sum() || c.I <= 0 || c.T.IsZero() ||
		ValidatePhysicalName(c.Q) != nil || !strings.HasSuffix(c.Q, DLQSuffix) {
		return nil, bad
	}
	if c.F != filter {
		return nil, invalidf("cursor was issued for other filters; pass the same filters as the first page, or start again without cursor")
	}
	return &c, nil
}

// deadKeysetCond selects, in one DLQ's table, the rows after c in the order
// (enqueued_at, dlq, msg_id), descending or ascending. dlq is constant
// within a table, so comparing it with c.Q here leaves a plain condition on
// the table's own columns.
func deadKeysetCond(dlq string, c *deadCursor, desc bool, t, id string) string {
	op := ">"
	if desc {
		op = "<"
	}
	cmp := strings.Compare(dlq, c.Q)
	switch {
	case cmp == 0:
		return "(enqueued_at, msg_id) " + op + " (" + t + ", " + id + ")"
	case (cmp < 0) == desc:
		return "enqueued_at " + op + "= " + t
	default:
		return "enqueued_at " + op + " " + t
	}
}

// pageSQL selects cols of up to limit rows after the cursor, across the
// DLQs, in (enqueued_at, dlq, msg_id) order.
func (q *deadQuery) pageSQL(cols string, after *deadCursor, desc bool, limit int) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	lim := q.arg(limit)
	var more func(string) string
	if after != nil {
		t, id := q.arg(after.T), q.arg(after.I)
		more = func(dlq string) string { return deadKeysetCond(dlq, after, desc, t, id) }
	}
	inner := q.union(cols, more, "ORDER BY enqueued_at"+dir+", msg_id"+dir+" LIMIT "+lim)
	return "SELECT * FROM (" + inner + ") u ORDER BY enqueued_at" + dir + `, dlq COLLATE "C"` + dir + ", msg_id" + dir + " LIMIT " + lim
}

// ---- list, show, find, summary ----

const deadItemCols = `msg_id, enqueued_at, ` + sqlDeadKind + ` AS kind,
	coalesce(octet_length(message::text), 0) AS payload_bytes,
	CASE WHEN jsonb_typeof(` + sqlDeadBlock + `) = 'object' THEN ` + sqlDeadBlock + ` - 'backtrace' END AS block`

// ListDead returns one page of dead messages, newest first, over one DLQ
// or all of them. cursor is empty for the first page, then the NextCursor
// of the previous page, with the same filter. limit is 1 to MaxDeadPage.
func (s *Store) ListDead(ctx context.Context, f DeadFilter, cursor string, limit int) (DeadPage, error) {
	page := DeadPage{Items: []DeadItem{}}
	if limit < 1 || limit > MaxDeadPage {
		return page, invalidf("list dead messages: limit %d is out of range; pass 1 to %d", limit, MaxDeadPage)
	}
	if err := f.validate(); err != nil {
		return page, err
	}
	fp := f.fingerprint()
	var after *deadCursor
	if cursor != "" {
		var err error
		if after, err = decodeDeadCursor(cursor, fp); err != nil {
			return page, err
		}
	}
	err := s.runDead(ctx, f, func(q *deadQuery) error {
		items, err := s.queryDeadItems(ctx, q.pageSQL(deadItemCols, after, true, limit+1), q.args)
		page.Items = items
		return err
	})
	if err != nil {
		return DeadPage{Items: []DeadItem{}}, wrapDead("list dead messages", err)
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		page.NextCursor = encodeDeadCursor(page.Items[limit-1], fp)
	}
	return page, nil
}

func (s *Store) queryDeadItems(ctx context.Context, sql string, args []any) ([]DeadItem, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadItem, error) {
		var it DeadItem
		var kind *string
		var block []byte
		err := r.Scan(&it.DLQ, &it.MsgID, &it.DeadLetteredAt, &kind, &it.PayloadBytes, &block)
		if kind != nil {
			it.Kind = *kind
		}
		if b := parseDeadBlock(block); b != nil {
			it.Reason, it.SourceQueue, it.SourceMsgID = b.Reason, b.SourceQueue, b.SourceMsgID
			it.Attempts, it.MaxRetries, it.RetriesFromDLQ = b.Attempts, b.MaxRetries, b.RetriesFromDLQ
			it.ErrorClass, it.ErrorMessage = b.ErrorClass, b.ErrorMessage
		}
		return it, err
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// parseDeadBlock reads a dead-letter block leniently: a block edited by hand may
// hold a wrong type somewhere, and every field that still reads is kept.
func parseDeadBlock(raw []byte) *DeadLetterBlock {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil
	}
	b := &DeadLetterBlock{}
	if json.Unmarshal(raw, b) == nil {
		return b
	}
	*b = DeadLetterBlock{}
	for k, v := range fields {
		one, _ := json.Marshal(map[string]json.RawMessage{k: v})
		_ = json.Unmarshal(one, b)
	}
	return b
}

// ShowDead returns one dead message with its payload, headers, block and
// failure history. dlq may name the DLQ (orders_dlq) or its queue (orders).
func (s *Store) ShowDead(ctx context.Context, dlq string, msgID int64) (DeadMessage, error) {
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return DeadMessage{}, err
	}
	if msgID <= 0 {
		return DeadMessage{}, invalidf("show dead message: id %d is not valid; ids are positive", msgID)
	}
	m := DeadMessage{DLQ: name}
	var kind *string
	var payload, headers, block []byte
	err = s.pool.QueryRow(ctx, `SELECT msg_id, read_ct, enqueued_at, `+sqlDeadKind+`, message, headers, `+sqlDeadBlock+`
		FROM `+queueTable(name)+` WHERE msg_id = $1`, msgID).
		Scan(&m.MsgID, &m.ReadCount, &m.DeadLetteredAt, &kind, &payload, &headers, &block)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return DeadMessage{}, deadGoneErr(name, msgID)
	case isUndefinedTable(err):
		return DeadMessage{}, dlqMissingErr(name)
	case err != nil:
		return DeadMessage{}, fmt.Errorf("store: show dead message %d in %q: %w", msgID, name, err)
	}
	if kind != nil {
		m.Kind = *kind
	}
	m.Payload, m.Headers, m.Block = payload, headers, parseDeadBlock(block)
	if m.History, err = s.FailureHistory(ctx, name, msgID); err != nil {
		return DeadMessage{}, err
	}
	return m, nil
}

// FindDead returns the DLQs that hold a message with id msgID, by name. Ids
// are per queue, so one id may be in several DLQs.
func (s *Store) FindDead(ctx context.Context, msgID int64) ([]string, error) {
	if msgID <= 0 {
		return nil, invalidf("find dead message: id %d is not valid; ids are positive", msgID)
	}
	out := []string{}
	err := s.runDead(ctx, DeadFilter{}, func(q *deadQuery) error {
		id := q.arg(msgID)
		sql := q.union("msg_id", func(string) string { return "msg_id = " + id }, "")
		rows, err := s.pool.Query(ctx, `SELECT dlq FROM (`+sql+`) u ORDER BY dlq COLLATE "C"`, q.args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, wrapDead(fmt.Sprintf("find dead message %d", msgID), err)
	}
	return out, nil
}

// wrapDead wraps database errors; the store's own kinds pass unchanged.
func wrapDead(op string, err error) error {
	if err == nil || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// ---- retry, discard, purge ----

// deadRef is a dead message as the bulk operations need it.
type deadRef struct {
	dlq    string
	id     int64
	at     time.Time
	source string // the block's source_queue; "" when none
	group  string // the x-pgmq-group header; "" when none
}

const deadRefCols = `msg_id, enqueued_at, coalesce(` + sqlDeadBlock + `->>'source_queue', '') AS source_queue,
	coalesce(headers->>'` + HeaderPGMQGroup + `', '') AS grp`

func (s *Store) queryDeadRefs(ctx context.Context, sql string, args []any) ([]deadRef, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (deadRef, error) {
		var d deadRef
		err := r.Scan(&d.dlq, &d.id, &d.at, &d.source, &d.group)
		return d, err
	})
}

// deadRefsByID returns those of ids that are in dlq, ordered by id.
func (s *Store) deadRefsByID(ctx context.Context, dlq string, ids []int64) ([]deadRef, error) {
	sql := `SELECT $1::text, ` + deadRefCols + ` FROM ` + queueTable(dlq) + ` WHERE msg_id = ANY($2) ORDER BY msg_id`
	refs, err := s.queryDeadRefs(ctx, sql, []any{dlq, ids})
	if isUndefinedTable(err) {
		return nil, dlqMissingErr(dlq)
	}
	return refs, wrapDead("read dead messages of "+dlq, err)
}

// eachDeadPage calls fn with the messages f selects, oldest first, in pages
// of deadBatch, up to limit in all; done counts the messages passed so far.
// It pages by keyset, so messages fn leaves in place are not seen twice.
func (s *Store) eachDeadPage(ctx context.Context, f DeadFilter, limit int, fn func(refs []deadRef, done int) error) error {
	var after *deadCursor
	for done := 0; done < limit; {
		var refs []deadRef
		err := s.runDead(ctx, f, func(q *deadQuery) error {
			var err error
			refs, err = s.queryDeadRefs(ctx, q.pageSQL(deadRefCols, after, false, min(deadBatch, limit-done)), q.args)
			return err
		})
		if err != nil || len(refs) == 0 {
			return wrapDead("page through dead messages", err)
		}
		last := refs[len(refs)-1]
		after = &deadCursor{T: last.at, Q: last.dlq, I: last.id}
		done += len(refs)
		if err := fn(refs, done); err != nil {
			return err
		}
	}
	return nil
}

// countDead counts the messages f selects, up to limit.
func (s *Store) countDead(ctx context.Context, f DeadFilter, limit int) (int, error) {
	n := 0
	err := s.runDead(ctx, f, func(q *deadQuery) error {
		lim := q.arg(limit)
		sql := `SELECT count(*) FROM (SELECT 1 FROM (` + q.union("msg_id", nil, "LIMIT "+lim) + `) u LIMIT ` + lim + `) c`
		return s.pool.QueryRow(ctx, sql, q.args...).Scan(&n)
	})
	return n, wrapDead("count dead messages", err)
}

// deadFrozen bounds f to messages dead-lettered before now, so that a bulk
// operation does not meet again the messages it retried and that died again
// while it ran.
func (s *Store) deadFrozen(ctx context.Context, f DeadFilter) (DeadFilter, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		return f, fmt.Errorf("store: read the server clock: %w", err)
	}
	if f.Until.IsZero() || f.Until.After(now) {
		f.Until = now
	}
	return f, nil
}

func validateDeadBulk(op string, f DeadFilter, limit int) error {
	if limit < 1 || limit > MaxDeadBulk {
		return invalidf("%s dead messages: limit %d is out of range; pass 1 to %d, and repeat the call for more", op, limit, MaxDeadBulk)
	}
	return f.validate()
}

func validateRetryPayload(p json.RawMessage, n int) error {
	switch {
	case len(p) == 0:
		return nil
	case n != 1:
		return invalidf("retry with a corrected payload: pass exactly one message id, not %d", n)
	case len(p) > MaxPayloadBytes:
		return invalidf("retry with a corrected payload: payload is %d bytes; at most %d are allowed", len(p), MaxPayloadBytes)
	case !json.Valid(p):
		return invalidf("retry with a corrected payload: payload is not valid JSON")
	}
	return nil
}

func deadUniqueIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

func newRetryReport(opts RetryOptions) RetryReport {
	return RetryReport{DryRun: opts.DryRun, Moved: []RetriedMessage{}}
}

// RetryDead moves dead messages of dlq (a DLQ name, or its queue's) back to
// the queue they died in, or to the DLQ's base queue when that one is gone,
// each in its own transaction: one message failing does not stop the rest.
// A retried message loses its dead-letter block and carries
// pgbus_dlq_retries, the number of its trips out of a DLQ; its failure
// history goes with it. With one id, a failure is also returned as the error
// (ErrNotFound when the message is gone).
func (s *Store) RetryDead(ctx context.Context, dlq string, ids []int64, opts RetryOptions) (RetryReport, error) {
	rep := newRetryReport(opts)
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return rep, err
	}
	if err := validateIDs("retry from", name, ids); err != nil {
		return rep, err
	}
	ids = deadUniqueIDs(ids)
	if err := validateRetryPayload(opts.Payload, len(ids)); err != nil {
		return rep, err
	}
	for start := 0; start < len(ids); start += deadBatch {
		chunk := ids[start:min(start+deadBatch, len(ids))]
		if err := s.retryChunk(ctx, name, chunk, opts, &rep); err != nil {
			return rep, err
		}
		if opts.Progress != nil {
			opts.Progress(start+len(chunk), len(ids))
		}
	}
	if len(ids) == 1 && rep.firstErr != nil {
		return rep, rep.firstErr
	}
	return rep, nil
}

func (s *Store) retryChunk(ctx context.Context, dlq string, ids []int64, opts RetryOptions, rep *RetryReport) error {
	refs, err := s.deadRefsByID(ctx, dlq, ids)
	if err != nil {
		return err
	}
	found := make(map[int64]bool, len(refs))
	for _, r := range refs {
		found[r.id] = true
	}
	for _, id := range ids {
		if !found[id] {
			rep.fail(dlq, id, deadGoneErr(dlq, id))
		}
	}
	return s.retryRefs(ctx, refs, opts, rep)
}

// RetryDeadMatching retries, as RetryDead does, up to limit dead messages
// that f selects, oldest first, in batches. limit is 1 to MaxDeadBulk.
// Messages that die again while it runs are not retried a second time.
func (s *Store) RetryDeadMatching(ctx context.Context, f DeadFilter, limit int, opts RetryOptions) (RetryReport, error) {
	rep := newRetryReport(opts)
	if err := validateDeadBulk("retry", f, limit); err != nil {
		return rep, err
	}
	if len(opts.Payload) > 0 {
		return rep, invalidf("retry matching: a corrected payload applies to one message; pass its id instead of a filter")
	}
	f, err := s.deadFrozen(ctx, f)
	if err != nil {
		return rep, err
	}
	total, err := s.countDead(ctx, f, limit)
	if err != nil {
		return rep, err
	}
	err = s.eachDeadPage(ctx, f, limit, func(refs []deadRef, done int) error {
		if err := s.retryRefs(ctx, refs, opts, &rep); err != nil {
			return err
		}
		if opts.Progress != nil {
			opts.Progress(done, max(total, done))
		}
		return nil
	})
	return rep, err
}

// deadRetryOutcome is what became of one message of a batch.
type deadRetryOutcome struct {
	target string
	newID  int64
	err    error
}

// retryRefs retries messages known to have been in their DLQ a moment ago
// and adds the outcomes to rep in the order of refs. It stops early only
// when ctx ends.
func (s *Store) retryRefs(ctx context.Context, refs []deadRef, opts RetryOptions, rep *RetryReport) error {
	existing, err := s.retryCandidates(ctx, refs)
	if err != nil {
		return err
	}
	out := make([]deadRetryOutcome, len(refs))
	for i, r := range refs {
		if out[i].target = deadRetryTarget(r, existing); out[i].target == "" {
			base := deadBaseOf(r.dlq)
			out[i].err = notFoundf("queue %q no longer exists, nor does the queue it died in (%q); recreate it with pgbus queue create %s, then retry", base, r.source, base)
		}
	}
	if !opts.DryRun {
		s.retryParallel(ctx, refs, out, existing, opts.Payload)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	for i, r := range refs {
		if out[i].err != nil {
			rep.fail(r.dlq, r.id, out[i].err)
			continue
		}
		rep.moved(RetriedMessage{DLQ: r.dlq, DLQMsgID: r.id, Queue: out[i].target, MsgID: out[i].newID})
	}
	return nil
}

// retryParallel moves messages over a few connections at once: each move
// is its own transaction, and concurrent commits share WAL flushes. Messages
// of one PGMQ FIFO group stay on one connection, in order, so the group's
// order survives the trip.
func (s *Store) retryParallel(ctx context.Context, refs []deadRef, out []deadRetryOutcome, existing map[string]bool, payload json.RawMessage) {
	lanes := max(1, min(retryLanes, int(s.pool.Config().MaxConns)/2, len(refs)))
	var wg sync.WaitGroup
	for lane := range lanes {
		wg.Go(func() {
			for i, r := range refs {
				if deadRetryLane(r, i, lanes) != lane || out[i].err != nil || ctx.Err() != nil {
					continue
				}
				out[i] = s.retryWithFallback(ctx, r, out[i].target, existing, payload)
			}
		})
	}
	wg.Wait()
}

func deadRetryLane(r deadRef, i, lanes int) int {
	if r.group == "" {
		return i % lanes
	}
	h := fnv.New32a()
	h.Write([]byte(r.group))
	return int(h.Sum32() % uint32(lanes))
}

func (s *Store) retryWithFallback(ctx context.Context, r deadRef, target string, existing map[string]bool, payload json.RawMessage) deadRetryOutcome {
	newID, err := s.deadRetryOne(ctx, r, target, payload)
	if base := deadBaseOf(r.dlq); isUndefinedTable(err) && target != base && existing[base] {
		// The source queue was dropped since we looked: fall back as if we
		// had seen it gone.
		target = base
		newID, err = s.deadRetryOne(ctx, r, target, payload)
	}
	return deadRetryOutcome{target: target, newID: newID, err: err}
}

// retryCandidates finds which of the queues the messages could go back to
// exist: their source queues and their DLQs' base queues.
func (s *Store) retryCandidates(ctx context.Context, refs []deadRef) (map[string]bool, error) {
	var names []string
	for _, r := range refs {
		names = append(names, deadBaseOf(r.dlq))
		if deadValidSource(r.source) {
			names = append(names, r.source)
		}
	}
	slices.Sort(names)
	return s.deadExistingQueues(ctx, slices.Compact(names))
}

// deadValidSource tells whether a block's source_queue may be used as a
// table name: the block is data, and may have been edited.
func deadValidSource(q string) bool {
	return q != "" && ValidatePhysicalName(q) == nil && !strings.HasSuffix(q, DLQSuffix)
}

func deadRetryTarget(r deadRef, existing map[string]bool) string {
	if deadValidSource(r.source) && existing[r.source] {
		return r.source
	}
	if base := deadBaseOf(r.dlq); existing[base] {
		return base
	}
	return ""
}

// deadRetryOne moves one message out of its DLQ in one statement, so it is
// either back in target or still in the DLQ, never both: the delete finds
// nothing when another retry took the message first.
func (s *Store) deadRetryOne(ctx context.Context, r deadRef, target string, payload json.RawMessage) (int64, error) {
	sql, args := deadRetrySQL(r, target, payload)
	var id int64
	err := s.pool.QueryRow(ctx, sql, args...).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, deadGoneErr(r.dlq, r.id)
	case err != nil:
		return 0, fmt.Errorf("store: retry message %d from %q into %q: %w", r.id, r.dlq, target, err)
	}
	return id, nil
}

// sqlDeadRetryHeaders computes the headers of a message going back from the DLQ
// row d: without the block, with the trip counted; headers that were not a
// JSON object come back as they were (they cannot hold a count).
const sqlDeadRetryHeaders = `CASE
	WHEN jsonb_typeof(d.headers) = 'object' AND d.headers ? '` + HeaderOriginalHeaders + `'
		THEN d.headers->'` + HeaderOriginalHeaders + `'
	WHEN jsonb_typeof(d.headers) = 'object'
		THEN (d.headers - '` + HeaderDeadLetter + `') || jsonb_build_object('` + HeaderDLQRetries + `', 1 + CASE
			WHEN jsonb_typeof(d.headers->'` + HeaderDLQRetries + `') = 'number'
			THEN least(greatest(trunc((d.headers->>'` + HeaderDLQRetries + `')::numeric), 0), 1000000000)::int
			ELSE 0 END)
	WHEN d.headers IS NULL OR jsonb_typeof(d.headers) = 'null'
		THEN jsonb_build_object('` + HeaderDLQRetries + `', 1)
	ELSE d.headers END`

// deadRetrySQL builds the statement of deadRetryOne. With a corrected payload, the
// original row also goes to the DLQ's archive, whole, and the history notes
// where. Parameters: $1 id, $2 payload, $3 target, $4 dlq, [$5 note].
func deadRetrySQL(r deadRef, target string, payload json.RawMessage) (string, []any) {
	var p any
	if len(payload) > 0 {
		p = string(payload)
	}
	args := []any{r.id, p, target, r.dlq}
	sql := `WITH d AS (
		DELETE FROM ` + queueTable(r.dlq) + ` WHERE msg_id = $1
		RETURNING msg_id, read_ct, enqueued_at, vt, message, headers
	), ins AS (
		INSERT INTO ` + queueTable(target) + ` (vt, message, headers)
		SELECT clock_timestamp(), coalesce($2::jsonb, d.message), ` + sqlDeadRetryHeaders + ` FROM d
		RETURNING msg_id
	), rekey AS (
		UPDATE pgbus.failures f SET queue_name = $3::text, msg_id = ins.msg_id
		FROM ins WHERE f.queue_name = $4::text AND f.msg_id = $1
	)`
	if p != nil {
		note := fmt.Sprintf("payload replaced on retry; the original message is kept in the archive of %s (pgmq.a_%s, msg_id %d) until purged. Original payload: ", r.dlq, r.dlq, r.id)
		args = append(args, note)
		sql += `, arch AS (
		INSERT INTO ` + archiveTable(r.dlq) + ` (msg_id, read_ct, enqueued_at, vt, message, headers)
		SELECT msg_id, read_ct, enqueued_at, vt, message, headers FROM d
	), note AS (
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message)
		SELECT $3::text, ins.msg_id, 0, coalesce(d.headers->>'` + HeaderKind + `', d.message->>'job_class', ''),
			'` + PayloadReplacedClass + `', $5::text || ` + sqlDeadTruncate("coalesce(d.message::text, 'null')", HistoryErrorMessageMax-len(note)) + `
		FROM d, ins
	)`
	}
	sql += ` SELECT ins.msg_id FROM ins, (SELECT pg_notify('` + notifyChannel + `', $3::text)) AS n`
	return sql, args
}

// DiscardDead moves dead messages of dlq to the DLQ's archive table, where
// they stay until PurgeDead removes them, and returns how many moved. With
// one id that is not there, it returns ErrNotFound.
func (s *Store) DiscardDead(ctx context.Context, dlq string, ids []int64) (int, error) {
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return 0, err
	}
	if err := validateIDs("discard from", name, ids); err != nil {
		return 0, err
	}
	done, err := s.ArchiveMany(ctx, name, ids)
	if err != nil {
		return 0, err
	}
	if len(done) == 0 && len(deadUniqueIDs(ids)) == 1 {
		return 0, deadGoneErr(name, ids[0])
	}
	return len(done), nil
}

// DiscardDeadMatching discards, as DiscardDead does, up to limit dead
// messages that f selects, oldest first, in batches, and returns how many
// moved. limit is 1 to MaxDeadBulk.
//
// progress, when given, is called after each batch with the messages done
// and the total expected, for a progress bar.
func (s *Store) DiscardDeadMatching(ctx context.Context, f DeadFilter, limit int, progress ...func(done, total int)) (int, error) {
	if err := validateDeadBulk("discard", f, limit); err != nil {
		return 0, err
	}
	f, err := s.deadFrozen(ctx, f)
	if err != nil {
		return 0, err
	}
	total := limit
	if len(progress) > 0 {
		if total, err = s.countDead(ctx, f, limit); err != nil {
			return 0, err
		}
	}
	n := 0
	err = s.eachDeadPage(ctx, f, limit, func(refs []deadRef, done int) error {
		defer func() {
			for _, p := range progress {
				p(min(done, total), total)
			}
		}()
		byDLQ := map[string][]int64{}
		for _, r := range refs {
			byDLQ[r.dlq] = append(byDLQ[r.dlq], r.id)
		}
		for dlq, ids := range byDLQ {
			done, err := s.ArchiveMany(ctx, dlq, ids)
			if err != nil {
				return err
			}
			n += len(done)
		}
		return nil
	})
	return n, err
}

// PurgeDead deletes for good the discarded (archived) messages of dlq, or
// of every DLQ when dlq is "", archived more than olderThan ago (0: all),
// with their failure history, in batches. Live DLQ messages are not touched.
// It returns how many were deleted.
func (s *Store) PurgeDead(ctx context.Context, dlq string, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, invalidf("purge dead messages: age %s is negative; pass 0 to purge every discarded message, or an age such as 720h", olderThan)
	}
	dlqs, err := s.purgeTargets(ctx, dlq)
	if err != nil {
		return 0, err
	}
	var cutoff time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now() - $1 * interval '1 microsecond'`, olderThan.Microseconds()).Scan(&cutoff); err != nil {
		return 0, fmt.Errorf("store: purge dead messages: read the server clock: %w", err)
	}
	var total int64
	for _, d := range dlqs {
		n, err := s.purgeArchive(ctx, d, cutoff)
		total += n
		if isUndefinedTable(err) && dlq == "" {
			continue // dropped meanwhile: nothing left to purge
		}
		if err != nil {
			return total, queueErr(err, "purge the archive of", d)
		}
	}
	return total, nil
}

func (s *Store) purgeTargets(ctx context.Context, dlq string) ([]string, error) {
	if dlq == "" {
		return s.deadQueues(ctx)
	}
	name, err := s.resolveDLQ(ctx, dlq)
	return []string{name}, err
}

func (s *Store) purgeArchive(ctx context.Context, dlq string, cutoff time.Time) (int64, error) {
	a := archiveTable(dlq)
	sql := `WITH d AS (
		DELETE FROM ` + a + ` WHERE msg_id IN (
			SELECT msg_id FROM ` + a + ` WHERE archived_at <= $1
			ORDER BY archived_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING msg_id
	), f AS (
		DELETE FROM pgbus.failures f USING d WHERE f.queue_name = $3::text AND f.msg_id = d.msg_id
	)
	SELECT count(*) FROM d`
	var total int64
	for {
		var n int64
		if err := s.pool.QueryRow(ctx, sql, cutoff, purgeBatch, dlq).Scan(&n); err != nil {
			return total, err
		}
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}
