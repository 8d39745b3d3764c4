package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

const deadItemCols = `msg_id, enqueued_at, ` + sqlDeadKind + ` AS kind,
	` + sqlPayloadBytes + ` AS payload_bytes,
	CASE WHEN jsonb_typeof(` + sqlDeadBlock + `) = 'object' THEN ` + sqlDeadBlock + ` - 'backtrace' END AS block`

// DeadOrder is the order of a list of dead messages (ListDeadOrdered).
type DeadOrder int

const (
	// DeadNewest lists the newest dead-lettered first.
	DeadNewest DeadOrder = iota
	// DeadLargest lists the largest payload first (DeadItem.PayloadBytes),
	// then the newest: every message of the DLQs is read to rank them.
	DeadLargest
)

// ListDead returns one page of dead messages, newest first, over one DLQ
// or all of them. cursor is empty for the first page, then the NextCursor
// of the previous page, with the same filter. limit is 1 to MaxDeadPage.
func (s *Store) ListDead(ctx context.Context, f DeadFilter, cursor string, limit int) (DeadPage, error) {
	return s.ListDeadOrdered(ctx, f, DeadNewest, cursor, limit)
}

// ListDeadOrdered is ListDead in the order given. A cursor is valid only
// with the filter and the order of the page that issued it.
func (s *Store) ListDeadOrdered(ctx context.Context, f DeadFilter, order DeadOrder, cursor string, limit int) (DeadPage, error) {
	page := DeadPage{Items: []DeadItem{}}
	if limit < 1 || limit > MaxDeadPage {
		return page, invalidf("list dead messages: limit %d is out of range; pass 1 to %d", limit, MaxDeadPage)
	}
	if order != DeadNewest && order != DeadLargest {
		return page, invalidf("list dead messages: order %d is unknown; pass DeadNewest or DeadLargest", order)
	}
	if err := f.validate(); err != nil {
		return page, err
	}
	fp := f.fingerprint()
	if order == DeadLargest {
		// A cursor of one order is no place in the other.
		fp += "-largest"
	}
	after, err := s.decodeDeadCursor(ctx, cursor, fp)
	if err != nil {
		return page, err
	}
	compare := func(a, b DeadItem) int {
		return cmp.Or(b.DeadLetteredAt.Compare(a.DeadLetteredAt), strings.Compare(b.DLQ, a.DLQ), cmp.Compare(b.MsgID, a.MsgID))
	}
	if order == DeadLargest {
		newest := compare
		compare = func(a, b DeadItem) int { return cmp.Or(cmp.Compare(b.PayloadBytes, a.PayloadBytes), newest(a, b)) }
	}
	err = s.runDead(ctx, f, func(q *deadQuery) error {
		// One snapshot for the counts and the page, so that a DLQ passed
		// over as empty is empty in the page's snapshot too.
		return pgx.BeginTxFunc(ctx, s.reads, deadListTx, func(tx pgx.Tx) error {
			var err error
			if q.dlqs, err = deadHolding(ctx, tx, q.dlqs); err != nil || len(q.dlqs) == 0 {
				return err
			}
			// Each chunk's first limit+1, merged: the first limit+1 of all.
			var items []DeadItem
			err = inChunks(ctx, tx, q.dlqs, func(tx pgx.Tx, chunk []string) error {
				cq := q.chunk(chunk)
				var sql string
				if order == DeadLargest {
					sql = cq.largestSQL(deadItemCols, after, limit+1)
				} else {
					sql = cq.pageSQL(deadItemCols, after, true, limit+1)
				}
				got, err := queryDeadItems(ctx, tx, sql, cq.args)
				items = append(items, got...)
				return err
			})
			slices.SortFunc(items, compare)
			page.Items = items[:min(len(items), limit+1)]
			return err
		})
	})
	if err != nil {
		return DeadPage{Items: []DeadItem{}}, wrapDead("list dead messages", err)
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		key, err := s.cursorKey(ctx)
		if err != nil {
			return DeadPage{Items: []DeadItem{}}, err
		}
		last := page.Items[limit-1]
		size := int64(-1) // no size: a cursor of the newest first
		if order == DeadLargest {
			size = last.PayloadBytes
		}
		page.NextCursor = encodeSizedCursor(key, last.DeadLetteredAt, last.DLQ, last.MsgID, size, fp, f.Clock)
	}
	return page, nil
}

// deadListTx is the transaction of a list of dead messages: one snapshot,
// and without JIT, which a statement over many DLQs would otherwise have
// compiled at a cost of seconds.
var deadListTx = pgx.TxOptions{BeginQuery: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL jit = off"}

func queryDeadItems(ctx context.Context, tx pgx.Tx, sql string, args []any) ([]DeadItem, error) {
	rows, err := tx.Query(ctx, sql, args...)
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
		it.Missing = allMissing
		if b := parseDeadBlock(block); b != nil {
			it.Missing = b.Missing
			it.Reason, it.SourceQueue, it.SourceMsgID = b.Reason, b.SourceQueue, b.SourceMsgID
			it.Attempts, it.MaxRetries, it.RetriesFromDLQ = b.Attempts, b.MaxRetries, b.RetriesFromDLQ
			it.ErrorClass, it.ErrorMessage = b.ErrorClass, b.ErrorMessage
			it.ErrorAttempt, it.RecordedAttempts = b.ErrorAttempt, b.RecordedAttempts
		}
		return it, err
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// parseDeadBlock reads a dead-letter block leniently: a block edited by hand may
// hold a wrong type somewhere, and every field that still reads is kept. It
// is the one reader of a block's times, for every view: RFC 3339 with an
// offset, read as that instant in UTC; anything else, a time without an
// offset among them, is no time.
func parseDeadBlock(raw []byte) *DeadLetterBlock {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil
	}
	b := &DeadLetterBlock{}
	if json.Unmarshal(raw, b) != nil {
		*b = DeadLetterBlock{}
		for k, v := range fields {
			one, _ := json.Marshal(map[string]json.RawMessage{k: v})
			_ = json.Unmarshal(one, b)
		}
	}
	b.Missing = blockMissing(fields)
	b.SourceEnqueuedAt, b.DeadLetteredAt, b.ErrorRecordedAt = b.SourceEnqueuedAt.UTC(), b.DeadLetteredAt.UTC(), b.ErrorRecordedAt.UTC()
	if p := b.PreviousTripError; p != nil {
		p.ErrorRecordedAt = p.ErrorRecordedAt.UTC()
	}
	return b
}

// ShowDead returns one dead message with its payload, headers, block and
// failure history. dlq may name the DLQ (orders_dlq) or its queue (orders).
func (s *Store) ShowDead(ctx context.Context, dlq string, msgID int64) (DeadMessage, error) {
	return s.ShowDeadRead(ctx, dlq, msgID, DeadRead{Payload: true})
}

// DeadRead says what ShowDeadRead reads of a dead message's payload,
// which may be as large as MaxPayloadBytes: a view that does not show it
// leaves it in the database.
type DeadRead struct {
	// Payload reads the payload whole; without it DeadMessage.Payload is
	// nil, and PayloadBytes still gives its size.
	Payload bool
	// Fields are payload fields (keys joined by dots, a digit-only key
	// indexing an array, as DeadFilter's field paths) whose values are read
	// into DeadMessage.Fields, each cut to FieldChars characters (when
	// FieldChars is positive) unless it is an object or array of at most
	// MaxFieldJSONBytes, read whole.
	Fields     []string
	FieldChars int
}

// MaxFieldJSONBytes bounds an object or array that ShowDeadRead reads whole
// as a field's value: a larger one is read as text, cut to
// DeadRead.FieldChars.
const MaxFieldJSONBytes = 64 << 10

// FieldRead is the value of one payload field that ShowDeadRead read.
type FieldRead struct {
	Field string `json:"-"`
	// Value is a string as it is, any other value as JSON as the
	// database writes it (#>>), cut unless JSON.
	Value string `json:"value"`
	// JSON says Value is an object or array read whole.
	JSON bool `json:"json"`
	// Index is the field's place in DeadRead.Fields.
	Index int `json:"i"`
}

// ShowDeadRead returns one dead message with its headers, block, failure
// history and the size of its payload, and of the payload what r asks
// for. dlq may name the DLQ (orders_dlq) or its queue (orders).
func (s *Store) ShowDeadRead(ctx context.Context, dlq string, msgID int64, r DeadRead) (DeadMessage, error) {
	s.textFit(ctx) // learned, for TextShown
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return DeadMessage{}, err
	}
	if msgID <= 0 {
		return DeadMessage{}, invalidf("show dead message: id %d is not valid; ids are positive", msgID)
	}
	paths := make([][]string, len(r.Fields))
	for i, f := range r.Fields {
		paths[i] = strings.Split(f, ".")
	}
	pathsJSON, err := json.Marshal(paths)
	if err != nil {
		return DeadMessage{}, fmt.Errorf("store: show dead message %d in %q: %w", msgID, name, err)
	}
	chars := r.FieldChars
	if chars <= 0 {
		chars = MaxPayloadBytes
	}
	m := DeadMessage{DLQ: name}
	var kind *string
	var payload, headers, block, fields []byte
	// The fields' values are read where the payload is, one row each for
	// those the payload has (not null), in the order asked.
	err = s.reads.QueryRow(ctx, `SELECT msg_id, read_ct, enqueued_at, `+sqlDeadKind+`, CASE WHEN $2 THEN message END,
		coalesce(octet_length(message::text), 0), headers, `+sqlDeadBlock+`,
		(SELECT coalesce(jsonb_agg(jsonb_build_object('i', p.i - 1, 'json', f.whole,
			'value', CASE WHEN f.whole THEN v.v::text ELSE left(v.v #>> '{}', $4) END) ORDER BY p.i), '[]')
		 FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS p(path, i)
		 CROSS JOIN LATERAL (SELECT message #> ARRAY(SELECT jsonb_array_elements_text(p.path)) AS v) v
		 CROSS JOIN LATERAL (SELECT jsonb_typeof(v.v) IN ('object', 'array') AND octet_length(v.v::text) <= $5 AS whole) f
		 WHERE jsonb_typeof(v.v) IS DISTINCT FROM 'null' AND v.v IS NOT NULL)
		FROM `+queueTable(name)+` WHERE msg_id = $1`, msgID, r.Payload, string(pathsJSON), chars, MaxFieldJSONBytes).
		Scan(&m.MsgID, &m.ReadCount, &m.DeadLetteredAt, &kind, &payload, &m.PayloadBytes, &headers, &block, &fields)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return DeadMessage{}, deadGoneErr(name, msgID)
	case isUndefinedTable(err):
		return DeadMessage{}, s.dlqMissing(ctx, name)
	case err != nil:
		return DeadMessage{}, fmt.Errorf("store: show dead message %d in %q: %w", msgID, name, err)
	}
	if kind != nil {
		m.Kind = *kind
	}
	m.Payload, m.Headers, m.Block = payload, headers, parseDeadBlock(block)
	if err := json.Unmarshal(fields, &m.Fields); err != nil {
		return DeadMessage{}, fmt.Errorf("store: read the payload fields of dead message %d in %q: %w", msgID, name, err)
	}
	for i := range m.Fields {
		m.Fields[i].Field = r.Fields[m.Fields[i].Index]
	}
	if m.History, err = s.FailureHistory(ctx, name, msgID); err != nil {
		return DeadMessage{}, err
	}
	return m, nil
}

// DeadPayload returns the payload of dead message msgID in dlq (the DLQ,
// or its queue), for a view that read the rest of the message without it
// (ShowDeadRead). It returns an ErrNotFound when the message is no longer
// there.
func (s *Store) DeadPayload(ctx context.Context, dlq string, msgID int64) (json.RawMessage, error) {
	name, err := deadDLQOf(dlq)
	if err != nil {
		return nil, err
	}
	if msgID <= 0 {
		return nil, invalidf("read dead payload: id %d is not valid; ids are positive", msgID)
	}
	var payload []byte
	err = s.reads.QueryRow(ctx, `SELECT message FROM `+queueTable(name)+` WHERE msg_id = $1`, msgID).Scan(&payload)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, deadGoneErr(name, msgID)
	case isUndefinedTable(err):
		return nil, s.dlqMissing(ctx, name)
	case err != nil:
		return nil, fmt.Errorf("store: read the payload of dead message %d in %q: %w", msgID, name, err)
	}
	return payload, nil
}

// FindDead returns the DLQs that hold a message with id msgID, by name. Ids
// are per queue, so one id may be in several DLQs.
func (s *Store) FindDead(ctx context.Context, msgID int64) ([]string, error) {
	if msgID <= 0 {
		return nil, invalidf("find dead message: id %d is not valid; ids are positive", msgID)
	}
	out := []string{}
	err := s.runDead(ctx, DeadFilter{}, func(q *deadQuery) error {
		out = []string{}
		err := inChunks(ctx, nil, q.dlqs, func(_ pgx.Tx, chunk []string) error {
			cq := q.chunk(chunk)
			id := cq.arg(msgID)
			sql := cq.union("msg_id", func(string) string { return "msg_id = " + id }, "")
			rows, err := s.reads.Query(ctx, `SELECT dlq FROM (`+sql+`) u`, cq.args...)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(rows, pgx.RowTo[string])
			out = append(out, found...)
			return err
		})
		slices.Sort(out) // byte by byte, as COLLATE "C"
		return err
	})
	if err != nil {
		return nil, wrapDead(fmt.Sprintf("find dead message %d", msgID), err)
	}
	return out, nil
}

// DeadPayloadType returns the JSON type of the payload of dead message
// msgID in dlq (the DLQ, or its queue), as jsonb_typeof names it (object, array,
// string, number, boolean or null), and the kind of its job ("" when it
// names none). A retry with a corrected payload compares it with the
// correction's: a message's payload never changes while it is in its DLQ,
// so the type read here is the one the retry replaces. It returns an
// ErrNotFound when the message is no longer there.
func (s *Store) DeadPayloadType(ctx context.Context, dlq string, msgID int64) (typ, kind string, err error) {
	if dlq, err = deadDLQOf(dlq); err != nil {
		return "", "", err
	}
	err = s.reads.QueryRow(ctx, `SELECT coalesce(jsonb_typeof(message), 'null'), coalesce(`+sqlDeadKind+`, '')
		FROM `+queueTable(dlq)+` WHERE msg_id = $1`, msgID).Scan(&typ, &kind)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", "", deadGoneErr(dlq, msgID)
	case isUndefinedTable(err):
		return "", "", s.dlqMissing(ctx, dlq)
	case err != nil:
		return "", "", fmt.Errorf("store: read the payload type of dead message %d in %q: %w", msgID, dlq, err)
	}
	return typ, kind, nil
}
