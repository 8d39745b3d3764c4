package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Limits on single calls. They keep one call's memory and transaction bounded;
// callers with more work split it.
const (
	MaxBatch             = 10_000
	MaxPayloadBytes      = 8 << 20
	MaxHeadersBytes      = 64 << 10
	MaxDelay             = 365 * 24 * time.Hour
	MaxVisibilityTimeout = 7 * 24 * time.Hour
	notifyChannel        = "pgbus_send"
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
}

func validateNewMessage(i int, m NewMessage) error {
	where := "message"
	if i >= 0 {
		where = fmt.Sprintf("message %d of the batch", i)
	}
	if len(m.Payload) == 0 {
		return invalidf("%s: payload is empty; send any JSON value, for example {} or null", where)
	}
	if len(m.Payload) > MaxPayloadBytes {
		return invalidf("%s: payload is %d bytes; at most %d are allowed: store large data elsewhere and send a reference", where, len(m.Payload), MaxPayloadBytes)
	}
	if !json.Valid(m.Payload) {
		return invalidf("%s: payload is not valid JSON", where)
	}
	if err := validateHeaders(where, m.Headers); err != nil {
		return err
	}
	return validateDuration(where+": delay", m.Delay, 0, MaxDelay)
}

func validateHeaders(where string, h json.RawMessage) error {
	if len(h) == 0 {
		return nil
	}
	if len(h) > MaxHeadersBytes {
		return invalidf("%s: headers are %d bytes; at most %d are allowed", where, len(h), MaxHeadersBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(h, &obj); err != nil || obj == nil {
		return invalidf("%s: headers must be a JSON object such as {\"pgbus_kind\":\"email\"}", where)
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
	ids, err := s.SendBatch(ctx, queue, []NewMessage{m})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// SendBatch enqueues messages in one statement and one round trip, all or
// none, and returns their ids in order. Every message is checked before
// anything is written.
func (s *Store) SendBatch(ctx context.Context, queue string, msgs []NewMessage) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if len(msgs) == 0 || len(msgs) > MaxBatch {
		return nil, invalidf("send to %q: a batch holds 1 to %d messages, not %d", queue, MaxBatch, len(msgs))
	}
	delays := make([]int64, len(msgs))
	payloads := make([]string, len(msgs))
	headers := make([]*string, len(msgs))
	notify := false
	for i, m := range msgs {
		idx := i
		if len(msgs) == 1 {
			idx = -1
		}
		if err := validateNewMessage(idx, m); err != nil {
			return nil, err
		}
		delays[i] = m.Delay.Microseconds()
		payloads[i] = string(m.Payload)
		if len(m.Headers) > 0 {
			h := string(m.Headers)
			headers[i] = &h
		}
		notify = notify || m.Delay == 0
	}
	sql := `INSERT INTO ` + queueTable(queue) + ` (vt, message, headers)
		SELECT clock_timestamp() + d * interval '1 microsecond', m, h
		FROM unnest($1::bigint[], $2::jsonb[], $3::jsonb[]) AS t(d, m, h)
		RETURNING msg_id`
	if notify {
		sql = `WITH ins AS (` + sql + `)
			SELECT ins.msg_id FROM ins, (SELECT pg_notify('` + notifyChannel + `', $4)) AS n`
	}
	args := []any{delays, payloads, headers}
	if notify {
		args = append(args, queue)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, queueErr(err, "send to", queue)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, queueErr(err, "send to", queue)
	}
	return ids, nil
}

// Read claims up to qty visible messages, oldest first, hiding each for vt
// and counting the read. Messages locked by another reader are skipped, so
// concurrent readers never receive the same message while its vt runs.
func (s *Store) Read(ctx context.Context, queue string, vt time.Duration, qty int) ([]Message, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := validateDuration("read from "+queue+": visibility timeout", vt, time.Millisecond, MaxVisibilityTimeout); err != nil {
		return nil, err
	}
	if qty < 1 || qty > MaxBatch {
		return nil, invalidf("read from %q: quantity must be 1 to %d, not %d", queue, MaxBatch, qty)
	}
	info, err := s.tableInfo(ctx, queue)
	if err != nil {
		return nil, err
	}
	setLastRead, lastRead := "", "NULL::timestamptz"
	if info.queueHasLastReadAt {
		setLastRead, lastRead = "last_read_at = clock_timestamp(), ", "m.last_read_at"
	}
	q := queueTable(queue)
	sql := `WITH c AS (
			SELECT msg_id, vt FROM ` + q + `
			WHERE vt <= clock_timestamp()
			ORDER BY msg_id
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		)
		UPDATE ` + q + ` m
		SET ` + setLastRead + `vt = clock_timestamp() + $2 * interval '1 microsecond', read_ct = m.read_ct + 1
		FROM c WHERE m.msg_id = c.msg_id
		RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, ` + lastRead + `, m.message, m.headers, c.vt`
	rows, err := s.pool.Query(ctx, sql, qty, vt.Microseconds())
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

func scanReadMessage(r pgx.CollectableRow) (Message, error) {
	var m Message
	var payload, headers []byte
	err := r.Scan(&m.ID, &m.ReadCount, &m.EnqueuedAt, &m.VisibleAt, &m.LastReadAt, &payload, &headers, &m.VisibleSince)
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
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := validateIDs("archive in", queue, ids); err != nil {
		return nil, err
	}
	info, err := s.tableInfo(ctx, queue)
	if err != nil {
		return nil, err
	}
	cols := "msg_id, read_ct, enqueued_at, vt, message, headers"
	if info.archiveHasLastReadAt && info.queueHasLastReadAt {
		cols += ", last_read_at"
	}
	sql := `WITH d AS (DELETE FROM ` + queueTable(queue) + ` WHERE msg_id = ANY($1) RETURNING ` + cols + `)
		INSERT INTO ` + archiveTable(queue) + ` (` + cols + `) SELECT ` + cols + ` FROM d RETURNING msg_id`
	return s.collectIDs(ctx, "archive in", queue, sql, ids)
}

// Delete removes one message for good. It reports false when no such message
// was in the queue.
func (s *Store) Delete(ctx context.Context, queue string, id int64) (bool, error) {
	done, err := s.DeleteMany(ctx, queue, []int64{id})
	return len(done) == 1, err
}

// DeleteMany removes messages in one statement and returns the ids deleted.
func (s *Store) DeleteMany(ctx context.Context, queue string, ids []int64) ([]int64, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := validateIDs("delete from", queue, ids); err != nil {
		return nil, err
	}
	sql := `DELETE FROM ` + queueTable(queue) + ` WHERE msg_id = ANY($1) RETURNING msg_id`
	return s.collectIDs(ctx, "delete from", queue, sql, ids)
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
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := validateIDs("set visibility in", queue, ids); err != nil {
		return nil, err
	}
	if err := validateDuration("set visibility in "+queue+": timeout", vt, 0, MaxVisibilityTimeout); err != nil {
		return nil, err
	}
	sql := `UPDATE ` + queueTable(queue) + ` SET vt = clock_timestamp() + $2 * interval '1 microsecond'
		WHERE msg_id = ANY($1) RETURNING msg_id`
	return s.collectIDs(ctx, "set visibility in", queue, sql, ids, vt.Microseconds())
}

func (s *Store) collectIDs(ctx context.Context, op, queue, sql string, args ...any) ([]int64, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, queueErr(err, op, queue)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, queueErr(err, op, queue)
	}
	sortIDs(ids)
	return ids, nil
}
