package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/grace"
)

// Limits on single calls. They keep one call's memory and transaction bounded;
// callers with more work split it.
const (
	MaxBatch             = 10_000
	MaxPayloadBytes      = 8 << 20
	MaxHeadersBytes      = 64 << 10
	MaxDelay             = 365 * 24 * time.Hour
	MaxVisibilityTimeout = 7 * 24 * time.Hour
	// MaxIdempotencyKeyBytes bounds NewMessage.IdempotencyKey.
	MaxIdempotencyKeyBytes = 255
	// MaxBatchKeys bounds the distinct idempotency keys of one batch: the
	// batch holds a lock per key until it commits, and each takes a slot of
	// the server's shared lock table (64 per connection by default).
	MaxBatchKeys  = 1_000
	notifyChannel = "pgbus_send"
)

// NotifyChannel is the channel a send notifies, in the sending transaction,
// with the physical queue name as payload, when a message is visible at once.
const NotifyChannel = notifyChannel

// NewMessage is a message to send.
type NewMessage struct {
	// Payload is the message body: any JSON value.
	Payload json.RawMessage
	// Headers is a JSON object, or empty for none.
	Headers json.RawMessage
	// Delay postpones the first delivery; zero delivers at once.
	Delay time.Duration
	// IdempotencyKey, when set, makes the send return the id of the first
	// message sent with this key to this queue while that message is live or
	// archived within the queue's retention window, instead of a duplicate.
	// A retry out of the DLQ hands the key (its header) to the message it
	// brings back; a dead message holds none.
	// Put it in the pgbus_idempotency_key header too (engine.NewMessage does).
	IdempotencyKey string
}

// Message is a message as read from a queue.
type Message struct {
	ID         int64      `json:"msg_id"`
	ReadCount  int        `json:"read_ct"`
	EnqueuedAt time.Time  `json:"enqueued_at"`
	VisibleAt  time.Time  `json:"vt"`
	LastReadAt *time.Time `json:"last_read_at,omitempty"`
	// VisibleSince is when the message became visible for this read (its
	// vt before the read): enqueue-to-start latency is measured from it.
	VisibleSince time.Time       `json:"-"`
	Payload      json.RawMessage `json:"message"`
	Headers      json.RawMessage `json:"headers"`
	// Table, set by reads (Read, and a worker's), is the object id of the
	// table the message was read from: a queue dropped and made again under its name
	// has new tables, so it tells the queue read from apart from one made
	// since (StatsDelta.Table).
	Table uint32 `json:"-"`
}

// Claim names one read of a message: its id with the read count and
// enqueue time that read returned. An outcome written for a claim changes
// the message only while it is still at that read. The id alone is not
// enough: once the claim's visibility timeout passed, another worker may
// hold the message under a later read, and a queue dropped and made again
// hands its ids out anew to other messages. A claim with ReadCount 0 names
// the message at any read, for writes decided outside a worker's read.
type Claim struct {
	MsgID      int64
	ReadCount  int
	EnqueuedAt time.Time
}

// Claim returns the claim of the read that returned m.
func (m Message) Claim() Claim {
	return Claim{MsgID: m.ID, ReadCount: m.ReadCount, EnqueuedAt: m.EnqueuedAt}
}

// anyRead names ids at any read.
func anyRead(ids []int64) []Claim {
	out := make([]Claim, len(ids))
	for i, id := range ids {
		out[i].MsgID = id
	}
	return out
}

// claimColumns lays claims out as parallel arrays for unnest, as the
// columns t.id, t.claim_ct and t.claim_enq that sqlClaimed compares.
type claimColumns struct {
	ids   []int64
	reads []int32
	enqs  []time.Time
}

func newClaimColumns(n int) *claimColumns {
	return &claimColumns{ids: make([]int64, 0, n), reads: make([]int32, 0, n), enqs: make([]time.Time, 0, n)}
}

func claimColumnsOf(claims []Claim) *claimColumns {
	c := newClaimColumns(len(claims))
	for _, cl := range claims {
		c.add(cl)
	}
	return c
}

func (c *claimColumns) add(cl Claim) {
	c.ids = append(c.ids, cl.MsgID)
	c.reads = append(c.reads, int32(cl.ReadCount))
	c.enqs = append(c.enqs, cl.EnqueuedAt)
}

// sqlClaimed holds when queue row q is still at the read that t claims.
// It comes on top of q.msg_id = t.id, which finds the row by its primary
// key, and only filters the row found.
const sqlClaimed = `(t.claim_ct = 0 OR q.read_ct = t.claim_ct AND q.enqueued_at = t.claim_enq)`

// lockInOrderSQL is a CTE, named l, that locks the rows of queue table
// (aliased q) where the SQL condition where holds in msg_id order, with
// the row lock mode of the write that follows (FOR UPDATE before a
// DELETE, FOR NO KEY UPDATE before an UPDATE). A write joined with the
// ids alone locks its rows in whatever order its plan meets them, the
// order of the ids given when it looks each up by its key, or of the
// table or an index when it scans one: two writes of one batch given in
// different orders, a worker's heartbeat and its outcomes, deadlocked
// until PostgreSQL ended one of them a second later. The write takes only
// rows in l (sqlLocked), which are all locked before it takes its
// first, so every write to many rows locks in one order, and waits rather
// than deadlocks.
func lockInOrderSQL(table, where, mode string) string {
	return `l AS (SELECT q.msg_id FROM ` + table + ` q WHERE ` + where + ` ORDER BY q.msg_id FOR ` + mode + `)`
}

// sqlLocked holds when queue row q is among those lockInOrderSQL locked.
// Its array is computed once, before the write takes any row.
const sqlLocked = `q.msg_id = ANY(ARRAY(SELECT msg_id FROM l))`

func validateClaim(op, queue string, c Claim) error {
	if c.MsgID <= 0 {
		return invalidf("%s %q: message id %d is not valid; ids are positive", op, queue, c.MsgID)
	}
	if c.ReadCount < 0 || c.ReadCount > math.MaxInt32 {
		return invalidf("%s %q: message %d: read count %d is out of range", op, queue, c.MsgID, c.ReadCount)
	}
	return nil
}

func validateClaims(op, queue string, claims []Claim) error {
	if len(claims) == 0 || len(claims) > MaxBatch {
		return invalidf("%s %q: pass 1 to %d message ids, not %d", op, queue, MaxBatch, len(claims))
	}
	for _, c := range claims {
		if err := validateClaim(op, queue, c); err != nil {
			return err
		}
	}
	return nil
}

// MessageError is the refusal (ErrInvalid) of one message of a batch of
// more than one, before anything is written: Index is its place in the
// batch, Err what is wrong with it.
type MessageError struct {
	Index int
	Err   error
}

func (e *MessageError) Error() string {
	return fmt.Sprintf("the batch's message at index %d: %v", e.Index, e.Err)
}

func (e *MessageError) Unwrap() error { return e.Err }

// validateNewMessage refuses m, the message at index i of a batch (-1 for
// a message sent alone), as a *MessageError naming i in a batch.
func validateNewMessage(i int, m NewMessage) error {
	err := validateMessage(m)
	if err != nil && i >= 0 {
		return &MessageError{Index: i, Err: err}
	}
	return err
}

func validateMessage(m NewMessage) error {
	if len(m.Payload) == 0 {
		return invalidf("payload is empty; send any JSON value, for example {} or null")
	}
	if len(m.Payload) > MaxPayloadBytes {
		return invalidf("payload is %d bytes; at most %d are allowed: store large data elsewhere and send a reference", len(m.Payload), MaxPayloadBytes)
	}
	if err := JSONError(m.Payload); err != nil {
		return invalidf("payload is not valid JSON: %v", err)
	}
	if why := CheckJSONText(m.Payload); why != "" {
		return invalidf("payload cannot be stored: %s", why)
	}
	// The key before the headers: the engine puts it in the headers too,
	// so a key too long for them was refused as headers too long, which
	// named neither the key nor its own limit.
	if len(m.IdempotencyKey) > MaxIdempotencyKeyBytes || !utf8.ValidString(m.IdempotencyKey) || strings.ContainsRune(m.IdempotencyKey, 0) {
		return invalidf("idempotency key must be valid UTF-8 without NUL, at most %d bytes", MaxIdempotencyKeyBytes)
	}
	if err := validateHeaders(m.Headers); err != nil {
		return err
	}
	return validateDuration("delay", m.Delay, 0, MaxDelay)
}

// MaxJSONDepth is how deeply a payload's arrays and objects may nest:
// Go's JSON reader, and with it every view and retry of a message, takes
// no deeper value.
const MaxJSONDepth = 10000

// JSONError says why raw is not one valid JSON value, or nil when it is.
// A value nested too deeply is said as such, where the reader says "invalid
// character", which reads as a typo.
func JSONError(raw []byte) error {
	if json.Valid(raw) {
		return nil
	}
	var v any
	err := json.Unmarshal(raw, &v)
	if err != nil && strings.Contains(err.Error(), "exceeded max depth") {
		return fmt.Errorf("its arrays and objects nest more than %d levels deep, more than pgbus reads: flatten it", MaxJSONDepth)
	}
	if err == nil {
		err = errors.New("it is not one JSON value")
	}
	return err
}

func validateHeaders(h json.RawMessage) error {
	if len(h) == 0 {
		return nil
	}
	if len(h) > MaxHeadersBytes {
		return invalidf("headers are %d bytes; at most %d are allowed: headers name and route a message, so put large values in its payload", len(h), MaxHeadersBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(h, &obj); err != nil || obj == nil {
		return invalidf("headers must be a JSON object such as {\"pgbus_kind\":\"email\"}")
	}
	if why := CheckJSONText(h); why != "" {
		return invalidf("headers cannot be stored: %s", why)
	}
	return nil
}

func validateDuration(what string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return invalidf("%s %s is out of range; use a value from %s to %s", what, d, lo, hi)
	}
	return nil
}

func headersArg(h json.RawMessage) any {
	if len(h) == 0 {
		return nil
	}
	return string(h)
}

// Send enqueues one message and returns its id.
func (s *Store) Send(ctx context.Context, queue string, m NewMessage) (int64, error) {
	id, _, err := s.SendOrFind(ctx, queue, m)
	return id, err
}

// SendOrFind is Send that also reports whether m's idempotency key is in
// force on queue already (found): the id is then that of the message sent
// with it before, and nothing is written. Without a key, found is false.
func (s *Store) SendOrFind(ctx context.Context, queue string, m NewMessage) (id int64, found bool, err error) {
	if m.IdempotencyKey == "" {
		ids, err := s.SendBatch(ctx, queue, []NewMessage{m})
		if err != nil {
			return 0, false, err
		}
		return ids[0], false, nil
	}
	if err := ValidatePhysicalName(queue); err != nil {
		return 0, false, err
	}
	if err := validateNewMessage(-1, m); err != nil {
		return 0, false, err
	}
	ids, founds, err := s.sendKeyed(ctx, queue, []NewMessage{m})
	if err != nil {
		return 0, false, err
	}
	return ids[0], founds[0], nil
}

// SendBatch enqueues messages, all or none, and returns their ids in
// order. Every message is checked before anything is written. A batch
// without idempotency keys is one statement and one round trip; one with
// keys is one transaction of a few round trips a message.
func (s *Store) SendBatch(ctx context.Context, queue string, msgs []NewMessage) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if len(msgs) == 0 || len(msgs) > MaxBatch {
		return nil, invalidf("send to %q: a batch holds 1 to %d messages, not %d", queue, MaxBatch, len(msgs))
	}
	keyed := false
	for i, m := range msgs {
		idx := i
		if len(msgs) == 1 {
			idx = -1
		}
		if err := validateNewMessage(idx, m); err != nil {
			return nil, err
		}
		keyed = keyed || m.IdempotencyKey != ""
	}
	if keyed {
		ids, _, err := s.sendKeyed(ctx, queue, msgs)
		return ids, err
	}
	delays := make([]int64, len(msgs))
	payloads := make([]string, len(msgs))
	headers := make([]*string, len(msgs))
	notify := false
	for i, m := range msgs {
		delays[i] = m.Delay.Microseconds()
		payloads[i] = jsonbText(m.Payload)
		if len(m.Headers) > 0 {
			h := jsonbText(m.Headers)
			headers[i] = &h
		}
		notify = notify || m.Delay == 0
	}
	sql, args := insertSQL(queue, notify, delays, payloads, headers)
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, sendErr(err, queue)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, sendErr(err, queue)
	}
	return ids, nil
}

// sendErr is queueErr for a send, which also tells a message PostgreSQL
// cannot store (a number beyond what jsonb holds, a value past its size
// limits) as the caller's to change, not the server's trouble.
func sendErr(err error, queue string) error {
	if why, ok := cannotStore(err); ok {
		return invalidf("send to %q: PostgreSQL cannot store the message: %s; make the number or value smaller, or send it as a string", queue, why)
	}
	return queueErr(err, "send to", queue)
}

// cannotStore tells whether err is PostgreSQL's refusal of a value it
// cannot store as jsonb (a number past what its numeric holds, SQLSTATE
// 22003; a value past a size limit, 54000), and why in its words: the
// caller's to change, not the server's trouble.
func cannotStore(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "22003" || pgErr.Code == "54000") {
		return pgErr.Message, true
	}
	return "", false
}

// insertSQL is the one statement that sends a batch, notifying listeners in
// the same transaction when some message is visible at once.
func insertSQL(queue string, notify bool, delays []int64, payloads []string, headers []*string) (string, []any) {
	sql := `INSERT INTO ` + queueTable(queue) + ` (vt, message, headers)
		SELECT clock_timestamp() + d * interval '1 microsecond', m, h
		FROM unnest($1::bigint[], $2::jsonb[], $3::jsonb[]) AS t(d, m, h)
		RETURNING msg_id`
	args := []any{delays, payloads, headers}
	if notify {
		sql = `WITH ins AS (` + sql + `)
			SELECT ins.msg_id FROM ins, (SELECT pg_notify('` + notifyChannel + `', $4)) AS n`
		args = append(args, queue)
	}
	return sql, args
}

// sendKeyed sends a batch holding idempotency keys in one transaction, so
// that it is all or none as any batch is. It first takes the lock of each
// of its keys, the lock a keyed send of one message and a DLQ retry of a
// keyed message take, in one order so that batches sharing keys wait for
// each other rather than deadlock; then it sends the messages in order, so
// that a key already used, by an earlier message of the batch too, returns
// its first message's id.
func (s *Store) sendKeyed(ctx context.Context, queue string, msgs []NewMessage) (ids []int64, found []bool, err error) {
	var keys []string
	for _, m := range msgs {
		if m.IdempotencyKey != "" {
			keys = append(keys, m.IdempotencyKey)
		}
	}
	slices.Sort(keys)
	if keys = slices.Compact(keys); len(keys) > MaxBatchKeys {
		return nil, nil, invalidf("send to %q: a batch holds at most %d distinct idempotency keys, not %d; send it in smaller batches", queue, MaxBatchKeys, len(keys))
	}
	ids, found = make([]int64, len(msgs)), make([]bool, len(msgs))
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// The subquery's order is the order the locks are taken in.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(l.h) FROM (
			SELECT DISTINCT `+keyLockSQL("$1", "k")+` AS h FROM unnest($2::text[]) AS k ORDER BY 1) AS l`, queue, keys); err != nil {
			return err
		}
		for i, m := range msgs {
			id, earlier, err := sendOneKeyed(ctx, tx, queue, m)
			if err != nil {
				return err
			}
			ids[i], found[i] = id, earlier
		}
		return nil
	})
	if err != nil {
		return nil, nil, sendErr(err, queue)
	}
	return ids, found, nil
}

// keyLockSQL is the id of the advisory lock of an idempotency key of a
// queue, both given as SQL expressions.
func keyLockSQL(queue, key string) string {
	return "hashtextextended(" + queue + " || chr(1) || " + key + ", 0)"
}

// sendOneKeyed sends one message of a batch, in its transaction, which
// holds the lock of its key; found reports that its key was in force
// already, and the id is then the message's sent with it before.
func sendOneKeyed(ctx context.Context, tx pgx.Tx, queue string, m NewMessage) (id int64, found bool, err error) {
	var h *string
	if len(m.Headers) > 0 {
		str := jsonbText(m.Headers)
		h = &str
	}
	sql, args := insertSQL(queue, m.Delay == 0, []int64{m.Delay.Microseconds()}, []string{jsonbText(m.Payload)}, []*string{h})
	if m.IdempotencyKey == "" {
		return id, false, tx.QueryRow(ctx, sql, args...).Scan(&id)
	}
	var first int64
	err = tx.QueryRow(ctx, `
		SELECT k.msg_id FROM pgbus.idempotency_keys k
		WHERE k.queue_name = $1 AND k.key = $2 AND `+keyInForceSQL(queue),
		queue, m.IdempotencyKey).Scan(&first)
	if err == nil {
		return first, true, nil
	}
	if err != pgx.ErrNoRows {
		return 0, false, err
	}
	if err := tx.QueryRow(ctx, sql, args...).Scan(&id); err != nil {
		return 0, false, err
	}
	// The key's created_at is its message's enqueued_at, read from the row
	// just written: the two name the message (keyInForceSQL).
	_, err = tx.Exec(ctx, `INSERT INTO pgbus.idempotency_keys (queue_name, key, msg_id, created_at)
		SELECT $1, $2, q.msg_id, q.enqueued_at FROM `+queueTable(queue)+` q WHERE q.msg_id = $3
		ON CONFLICT (queue_name, key) DO UPDATE SET msg_id = excluded.msg_id, created_at = excluded.created_at`, queue, m.IdempotencyKey, id)
	return id, false, err
}

// keyInForceSQL is the condition, on a row k of pgbus.idempotency_keys of
// physical queue queue, that a send with its key returns its message
// rather than a new one: the message is live, or archived within the
// archive retention of its queue. That retention is a setting of the
// logical queue: a priority level has no row of its own.
//
// The message is the one of the key's msg_id whose enqueued_at is the
// key's created_at, which every write of a key copies from its message's
// row (sendOneKeyed, sqlDeadRetryKey), as a worker's claim names a
// message (sqlClaimed): an id alone may name another message, once a
// queue dropped and made again outside pgbus (pgmq.drop_queue, then
// pgmq.create) or an unlogged queue emptied by a crash has started its ids
// over. The times are compared for equality, not order: a message sent by
// a transaction that began before the key was written has an earlier
// enqueued_at (its transaction's now()) and is another message all the
// same.
func keyInForceSQL(queue string) string {
	logical, level := "NULL::text", 0
	if base, n, ok := splitLevel(queue); ok {
		logical, level = sqlText(base), n
	}
	return fmt.Sprintf(`(EXISTS (SELECT 1 FROM %s q WHERE q.msg_id = k.msg_id AND q.enqueued_at = k.created_at)
		OR EXISTS (SELECT 1 FROM %s a WHERE a.msg_id = k.msg_id AND a.enqueued_at = k.created_at
		           AND a.archived_at > now() - coalesce(
		               (SELECT archive_retention_ms FROM pgbus.queues WHERE queue_name = %s),
		               (SELECT archive_retention_ms FROM pgbus.queues WHERE queue_name = %s AND priorities > %d),
		               %d) * interval '1 millisecond'))`,
		queueTable(queue), archiveTable(queue), sqlText(queue), logical, level, DefaultArchiveRetention.Milliseconds())
}

// sqlText is s as an SQL string literal.
func sqlText(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Read claims up to qty visible messages, those visible longest first,
// hiding each for vt and counting the read. Messages locked by another
// reader are skipped, so concurrent readers never receive the same message
// while its vt runs.
func (s *Store) Read(ctx context.Context, queue string, vt time.Duration, qty int) ([]Message, error) {
	info, err := s.checkRead(ctx, queue, vt, qty)
	if err != nil {
		return nil, err
	}
	return s.readWith(ctx, s.db, queue, vt, qty, info)
}

// ReadRouting reads like Read and, in the same transaction, dead-letters
// into dlq the messages route picks (those past their retries, say). A
// crash cannot then commit a read whose routing was lost, which would let
// the message be read once more and die with one attempt too many. It
// returns every message read, routed ones included.
func (s *Store) ReadRouting(ctx context.Context, queue string, vt time.Duration, qty int, dlq string, route func([]Message) []DeadLetterItem) ([]Message, error) {
	info, err := s.checkRead(ctx, queue, vt, qty)
	if err != nil {
		return nil, err
	}
	msgs, err := s.readRoutingOnce(ctx, queue, vt, qty, info, dlq, route)
	if err != nil && ctx.Err() == nil && neverRan(err) {
		// Nothing ran: the connection was dead, or ended for sitting idle.
		msgs, err = s.readRoutingOnce(withForcedPing(ctx), queue, vt, qty, info, dlq, route)
	}
	return msgs, err
}

func (s *Store) readRoutingOnce(ctx context.Context, queue string, vt time.Duration, qty int, info tableInfo, dlq string, route func([]Message) []DeadLetterItem) ([]Message, error) {
	conn, err := s.db.pool.Acquire(ctx)
	if err != nil {
		return nil, queueErr(err, "read from", queue)
	}
	// A connection left inside the transaction by an error is closed by
	// the pool on release, which rolls the transaction back.
	defer conn.Release()
	return readRoutingOn(ctx, conn.Conn(), queue, vt, qty, info, dlq, route)
}

// readRoutingOn sends BEGIN and the read together, so the common read (one
// that routes nothing) costs two round trips, not three: a worker's fetch
// loop waits on every one of them. Its commit waits for the WAL to reach
// disk, as every commit of pgbus does: a read is a claim, and one that a
// crash forgot would let the next read claim the message under the same
// read count, so that the first run's outcome, written later, would land
// on the message the second run holds.
func readRoutingOn(ctx context.Context, conn *pgx.Conn, queue string, vt time.Duration, qty int, info tableInfo, dlq string, route func([]Message) []DeadLetterItem) ([]Message, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(readSQL(queue, info), qty, vt.Microseconds())
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	var msgs []Message
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			msgs, err = pgx.CollectRows(rows, scanReadMessage)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, queueErr(err, "read from", queue)
	}
	sortByID(msgs)
	if items := route(msgs); len(items) > 0 {
		if _, err := deadLetterWith(ctx, conn, fitOf(conn), queue, dlq, SourceWorker, items); err != nil {
			return nil, err
		}
	}
	if grace.GivenUp(ctx) {
		// The caller stopped while the read ran (grace.After): undone,
		// the read claimed nothing, and there is nothing to give back.
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return nil, queueErr(err, "read from", queue)
		}
		return nil, fmt.Errorf("store: read from %q: undone, as its caller stopped: %w", queue, context.Canceled)
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return nil, queueErr(err, "read from", queue)
	}
	return msgs, nil
}

func (s *Store) checkRead(ctx context.Context, queue string, vt time.Duration, qty int) (tableInfo, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return tableInfo{}, err
	}
	if err := validateDuration("read from "+queue+": visibility timeout", vt, time.Millisecond, MaxVisibilityTimeout); err != nil {
		return tableInfo{}, err
	}
	if qty < 1 || qty > MaxBatch {
		return tableInfo{}, invalidf("read from %q: quantity must be 1 to %d, not %d", queue, MaxBatch, qty)
	}
	return s.tableInfo(ctx, queue)
}

// querier is what a pool and a transaction share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) readWith(ctx context.Context, db querier, queue string, vt time.Duration, qty int, info tableInfo) ([]Message, error) {
	rows, err := db.Query(ctx, readSQL(queue, info), qty, vt.Microseconds())
	if err != nil {
		return nil, queueErr(err, "read from", queue)
	}
	msgs, err := pgx.CollectRows(rows, scanReadMessage)
	if err != nil {
		return nil, queueErr(err, "read from", queue)
	}
	sortByID(msgs)
	return msgs, nil
}

// readSQL claims up to $1 visible messages for $2 microseconds. It takes
// them in the order they became visible, through the vt index: messages
// being worked carry a future vt, so the scan never walks past them, where
// an msg_id order would step over every one on each read.
func readSQL(queue string, info tableInfo) string {
	setLastRead, lastRead := "", "NULL::timestamptz"
	if info.queueHasLastReadAt {
		setLastRead, lastRead = "last_read_at = clock_timestamp(), ", "m.last_read_at"
	}
	q := queueTable(queue)
	return `WITH c AS (
			SELECT msg_id, vt FROM ` + q + `
			WHERE vt <= clock_timestamp()
			ORDER BY vt
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		)
		UPDATE ` + q + ` m
		SET ` + setLastRead + `vt = clock_timestamp() + $2 * interval '1 microsecond', read_ct = m.read_ct + 1,
			headers = ` + dropBreakerHoldSQL("m") + `
		FROM c WHERE m.msg_id = c.msg_id
		RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, ` + lastRead + `, m.message, m.headers, c.vt, m.tableoid`
}

func scanReadMessage(r pgx.CollectableRow) (Message, error) {
	var m Message
	var payload, headers []byte
	err := r.Scan(&m.ID, &m.ReadCount, &m.EnqueuedAt, &m.VisibleAt, &m.LastReadAt, &payload, &headers, &m.VisibleSince, &m.Table)
	m.Payload, m.Headers = payload, headers
	return m, err
}

func validateIDs(op, queue string, ids []int64) error {
	if len(ids) == 0 || len(ids) > MaxBatch {
		return invalidf("%s %q: pass 1 to %d message ids, not %d", op, queue, MaxBatch, len(ids))
	}
	for _, id := range ids {
		if id <= 0 {
			return invalidf("%s %q: message id %d is not valid; ids are positive", op, queue, id)
		}
	}
	return nil
}

// Archive moves one message to the queue's archive. It reports false when no
// such message was in the queue.
func (s *Store) Archive(ctx context.Context, queue string, id int64) (bool, error) {
	done, err := s.ArchiveMany(ctx, queue, []int64{id})
	return len(done) == 1, err
}

// ArchiveMany moves messages to the queue's archive in one statement and
// returns the ids that were moved; ids not in the queue are left out.
func (s *Store) ArchiveMany(ctx context.Context, queue string, ids []int64) ([]int64, error) {
	return s.ArchiveClaimed(ctx, queue, anyRead(ids))
}

// ArchiveClaimed moves the messages claimed to the queue's archive in one
// statement and returns the ids that were moved; a message no longer at
// the read claimed, or gone, is left as it is.
func (s *Store) ArchiveClaimed(ctx context.Context, queue string, claims []Claim) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := validateClaims("archive in", queue, claims); err != nil {
		return nil, err
	}
	sql, err := s.archiveSQL(ctx, queue)
	if err != nil {
		return nil, err
	}
	c := claimColumnsOf(claims)
	return s.collectIDs(ctx, "archive in", queue, sql, c.ids, c.reads, c.enqs)
}

// ArchiveClaimedKeepingOlder moves the messages claimed to the queue's
// archive as ArchiveClaimed does, but for a message whose id the archive
// already holds: an older message's, kept there when the queue's ids
// started again (the table and id sequence of an unlogged queue are
// emptied at a crash of the server, its archive is not). ArchiveClaimed
// is refused for it, every time. Here the archive keeps its older row, and
// the message is deleted from the queue without a copy there; its
// failures, kept under its id, are left as they are. It returns the ids
// archived and the ids deleted so.
func (s *Store) ArchiveClaimedKeepingOlder(ctx context.Context, queue string, claims []Claim) (archived, deleted []int64, err error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, nil, err
	}
	if err := validateClaims("archive in", queue, claims); err != nil {
		return nil, nil, err
	}
	sql, err := s.archiveSQLKeepingOlder(ctx, queue)
	if err != nil {
		return nil, nil, err
	}
	c := claimColumnsOf(claims)
	return s.collectArchived(ctx, "archive in", queue, sql, c.ids, c.reads, c.enqs)
}

// collectArchived runs sql, whose rows are the ids it took out of queue
// with whether their archive copy was written, and returns the ids
// archived and the others.
func (s *Store) collectArchived(ctx context.Context, op, queue, sql string, args ...any) (archived, deleted []int64, err error) {
	type row struct {
		ID       int64
		Archived bool
	}
	rows, err := settled(ctx, func() ([]row, error) {
		rows, err := s.db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.ID, &x.Archived)
			return x, err
		})
	})
	if err != nil {
		return nil, nil, s.archiveErr(ctx, err, op, queue)
	}
	for _, r := range rows {
		if r.Archived {
			archived = append(archived, r.ID)
		} else {
			deleted = append(deleted, r.ID)
		}
	}
	sortIDs(archived)
	sortIDs(deleted)
	return archived, deleted, nil
}

// archiveSQL returns the statement that moves the messages claimed by $1,
// $2 and $3 of queue to its archive and returns their ids.
func (s *Store) archiveSQL(ctx context.Context, queue string) (string, error) {
	d, list, err := s.archiveMoveSQL(ctx, queue)
	if err != nil {
		return "", err
	}
	return d + `
		INSERT INTO ` + archiveTable(queue) + ` (` + list + `) SELECT ` + list + ` FROM d RETURNING msg_id`, nil
}

// archiveSQLKeepingOlder is archiveSQL whose insert into the archive
// leaves out the rows of ids it holds already: each id taken out of the
// queue comes with whether its copy was written.
func (s *Store) archiveSQLKeepingOlder(ctx context.Context, queue string) (string, error) {
	d, list, err := s.archiveMoveSQL(ctx, queue)
	if err != nil {
		return "", err
	}
	return d + `, a AS (
			INSERT INTO ` + archiveTable(queue) + ` (` + list + `) SELECT ` + list + ` FROM d
			ON CONFLICT DO NOTHING RETURNING msg_id)
		SELECT d.msg_id, a.msg_id IS NOT NULL FROM d LEFT JOIN a ON a.msg_id = d.msg_id`, nil
}

// archiveMoveSQL returns the start of a statement that deletes the
// messages claimed by $1, $2 and $3 of queue, returning as d the columns
// of its archive, which it lists too.
func (s *Store) archiveMoveSQL(ctx context.Context, queue string) (d, list string, err error) {
	info, err := s.tableInfo(ctx, queue)
	if err != nil {
		return "", "", err
	}
	cols := []string{"msg_id", "read_ct", "enqueued_at", "vt", "message", "headers"}
	if info.archiveHasLastReadAt && info.queueHasLastReadAt {
		cols = append(cols, "last_read_at")
	}
	return `WITH ` + lockInOrderSQL(queueTable(queue), "q.msg_id = ANY($1::bigint[])", "UPDATE") + `, d AS (
			DELETE FROM ` + queueTable(queue) + ` q USING unnest($1::bigint[], $2::int[], $3::timestamptz[]) AS t(id, claim_ct, claim_enq)
			WHERE q.msg_id = t.id AND ` + sqlClaimed + ` AND ` + sqlLocked + `
			RETURNING q.` + strings.Join(cols, ", q.") + `)`, strings.Join(cols, ", "), nil
}

// Delete removes one message for good. It reports false when no such message
// was in the queue.
func (s *Store) Delete(ctx context.Context, queue string, id int64) (bool, error) {
	done, err := s.DeleteMany(ctx, queue, []int64{id})
	return len(done) == 1, err
}

// DeleteMany removes messages in one statement and returns the ids deleted.
func (s *Store) DeleteMany(ctx context.Context, queue string, ids []int64) ([]int64, error) {
	return s.DeleteClaimed(ctx, queue, anyRead(ids))
}

// DeleteClaimed removes the messages claimed in one statement, with their
// failure history, and returns the ids deleted; a message no longer at the
// read claimed is left.
func (s *Store) DeleteClaimed(ctx context.Context, queue string, claims []Claim) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := validateClaims("delete from", queue, claims); err != nil {
		return nil, err
	}
	c := claimColumnsOf(claims)
	sql := `WITH ` + lockInOrderSQL(queueTable(queue), "q.msg_id = ANY($1::bigint[])", "UPDATE") + `, d AS (
			DELETE FROM ` + queueTable(queue) + ` q USING unnest($1::bigint[], $2::int[], $3::timestamptz[]) AS t(id, claim_ct, claim_enq)
			WHERE q.msg_id = t.id AND ` + sqlClaimed + ` AND ` + sqlLocked + `
			RETURNING q.msg_id
		), f AS (
			DELETE FROM pgbus.failures WHERE queue_name = $4 AND msg_id IN (SELECT msg_id FROM d)
		)
		SELECT msg_id FROM d`
	return s.collectIDs(ctx, "delete from", queue, sql, c.ids, c.reads, c.enqs, queue)
}

// SetVisibility makes one message visible again after vt from now (zero:
// at once). It reports false when no such message was in the queue.
func (s *Store) SetVisibility(ctx context.Context, queue string, id int64, vt time.Duration) (bool, error) {
	done, err := s.SetVisibilityMany(ctx, queue, []int64{id}, vt)
	return len(done) == 1, err
}

// SetVisibilityMany sets the visibility timeout of messages in one statement
// and returns the ids updated.
func (s *Store) SetVisibilityMany(ctx context.Context, queue string, ids []int64, vt time.Duration) ([]int64, error) {
	return s.SetVisibilityClaimed(ctx, queue, anyRead(ids), vt)
}

// SetVisibilityClaimed sets the visibility timeout of the messages claimed
// in one statement and returns the ids updated; a message no longer at the
// read claimed is left to the read that holds it now.
func (s *Store) SetVisibilityClaimed(ctx context.Context, queue string, claims []Claim, vt time.Duration) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := validateClaims("set visibility in", queue, claims); err != nil {
		return nil, err
	}
	if err := validateDuration("set visibility in "+queue+": timeout", vt, 0, MaxVisibilityTimeout); err != nil {
		return nil, err
	}
	c := claimColumnsOf(claims)
	sql := `WITH ` + lockInOrderSQL(queueTable(queue), "q.msg_id = ANY($1::bigint[])", "NO KEY UPDATE") + `
		UPDATE ` + queueTable(queue) + ` q SET vt = clock_timestamp() + $4 * interval '1 microsecond'
		FROM unnest($1::bigint[], $2::int[], $3::timestamptz[]) AS t(id, claim_ct, claim_enq)
		WHERE q.msg_id = t.id AND ` + sqlClaimed + ` AND ` + sqlLocked + `
		RETURNING q.msg_id`
	return s.collectIDs(ctx, "set visibility in", queue, sql, c.ids, c.reads, c.enqs, vt.Microseconds())
}

func (s *Store) collectIDs(ctx context.Context, op, queue, sql string, args ...any) ([]int64, error) {
	ids, err := settled(ctx, func() ([]int64, error) {
		rows, err := s.db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int64])
	})
	if err != nil {
		return nil, s.archiveErr(ctx, err, op, queue)
	}
	sortIDs(ids)
	return ids, nil
}
