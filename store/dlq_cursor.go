package store

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// deadCursor is a position in the order (enqueued_at, dlq, msg_id), for
// the filter whose fingerprint is F. P, in Unix microseconds, is the
// instant the filter's ages counted back from, for a filter with ages (0
// without: the cursors of such filters are as they were before P). M is
// the HMAC-SHA256 of the other fields under the database's cursor key, so
// that a client can pass back only positions, and instants, this
// database's pgbus issued. The audit log's cursors are the same, with
// their entry's time and id, and Q auditCursorPlace. A summary's cursors
// (DeadGroupCursor) are the same too, a position in the order of groups
// (count, last dead-letter time, DLQ, key): I the count, T the time, Q
// the DLQ and G the key.
type deadCursor struct {
	V int       `json:"v"`
	T time.Time `json:"t"`
	Q string    `json:"q"`
	I int64     `json:"i"`
	F string    `json:"f"`
	P int64     `json:"p,omitempty"`
	// H, in a cursor of ListAudit, is the highest id of the audit log
	// when the listing's first page was read: a completion above it came
	// after, and its pending entry is shown as that page saw it.
	H int64 `json:"h,omitempty"`
	// G is, in a cursor of a summary, the key of the group it follows.
	G string `json:"g,omitempty"`
	// B is, in a cursor of a list of the largest payloads first
	// (DeadLargest), the payload size of the message it follows, plus
	// one, so that a size of 0 is written too.
	B int64  `json:"b,omitempty"`
	M string `json:"m,omitempty"`
}

// deadCursorVersion 2 is signed with the database's key; version 1
// cursors carried an unkeyed checksum and are refused.
const deadCursorVersion = 2

// errBadCursor is the answer to any cursor not issued with this database's
// key: tampered, from another database, from an older pgbus, or not a
// cursor at all.
var errBadCursor = cursorf("cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor")

// mac returns c's signature under key: the HMAC of c's JSON without M, in
// base64url.
func (c deadCursor) mac(key []byte) string {
	c.M = ""
	b, _ := json.Marshal(c)
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// encodeDeadCursor returns the cursor of the position after message id
// of dlq at time t, for the filter whose fingerprint is filter and whose
// ages counted back from clock (zero: the filter has none).
func encodeDeadCursor(key []byte, t time.Time, dlq string, id int64, filter string, clock time.Time) string {
	return encodeSizedCursor(key, t, dlq, id, -1, filter, clock)
}

// encodeSizedCursor is encodeDeadCursor for a list ordered by payload
// size too: size is the payload size of the message, -1 for none.
func encodeSizedCursor(key []byte, t time.Time, dlq string, id, size int64, filter string, clock time.Time) string {
	c := deadCursor{V: deadCursorVersion, T: t.UTC(), Q: dlq, I: id, F: filter, B: size + 1}
	if !clock.IsZero() {
		c.P = clock.UnixMicro()
	}
	c.M = c.mac(key)
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeDeadCursor(key []byte, s, filter string) (*deadCursor, error) {
	return decodeSignedCursor(key, s, filter, inDLQ)
}

// inDLQ says whether c's Q is a DLQ's name, as in the cursors of lists of
// dead messages.
func inDLQ(c *deadCursor) bool {
	return c.G == "" && isDLQName(c.Q)
}

// inQueueArchive says whether c is a cursor of ListHandlerDiscarded: a
// place in the archive of a queue that is no DLQ.
func inQueueArchive(c *deadCursor) bool {
	return c.G == "" && ValidatePhysicalName(c.Q) == nil && !strings.HasSuffix(c.Q, DLQSuffix)
}

// inSummary says whether c is a summary's cursor: a group's key in a DLQ.
func inSummary(c *deadCursor) bool {
	return IsGroupKey(c.G) && isDLQName(c.Q)
}

// isDLQName says whether q is a DLQ's name.
func isDLQName(q string) bool {
	return ValidatePhysicalName(q) == nil && strings.HasSuffix(q, DLQSuffix)
}

// decodeSignedCursor checks s against key and filter, with place saying
// whether its Q names a place of the list it is given to: the lists of
// dead messages name a DLQ (inDLQ); the audit log's, which takes the same
// cursors, a Q of its own.
func decodeSignedCursor(key []byte, s, filter string, place func(*deadCursor) bool) (*deadCursor, error) {
	c, err := openSignedCursor(key, s, place)
	if err != nil {
		return nil, err
	}
	if c.F != filter {
		return nil, cursorf("cursor was issued for other filters; pass the same filters as the first page, or start again without cursor")
	}
	return c, nil
}

// openSignedCursor checks that s is a cursor this database's pgbus issued,
// unchanged, for a place of the list (place), for whichever filter.
func openSignedCursor(key []byte, s string, place func(*deadCursor) bool) (*deadCursor, error) {
	if len(s) > 1024 {
		return nil, errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errBadCursor
	}
	var c deadCursor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&c) != nil || dec.Decode(&struct{}{}) != io.EOF || c.V != deadCursorVersion {
		return nil, errBadCursor
	}
	// Compared encoded: decoding would ignore the spare bits of the last
	// character, letting one cursor be written several ways.
	if !hmac.Equal([]byte(c.M), []byte(c.mac(key))) {
		return nil, errBadCursor
	}
	// Signed by this database's pgbus, so well formed; checked anyway, as
	// the key is readable by every role that may read pgbus.
	if c.I <= 0 || c.T.IsZero() || c.P < 0 || c.B < 0 || !place(&c) {
		return nil, errBadCursor
	}
	return &c, nil
}

// deadKeysetCond selects, in one DLQ's table, the rows after c in the order
// (enqueued_at, dlq, msg_id), descending or ascending. dlq is constant
// within a table, so comparing it with c.Q here leaves a plain condition on
// the table's own columns.
func deadKeysetCond(dlq string, c *deadCursor, desc bool, t string, id func() string) string {
	op := ">"
	if desc {
		op = "<"
	}
	cmp := strings.Compare(dlq, c.Q)
	switch {
	case cmp == 0:
		return "(enqueued_at, msg_id) " + op + " (" + t + ", " + id() + ")"
	case (cmp < 0) == desc:
		return "enqueued_at " + op + "= " + t
	default:
		return "enqueued_at " + op + " " + t
	}
}

// pageSQL selects cols of up to limit rows after the cursor, across the
// DLQs, in (enqueued_at, dlq, msg_id) order.
func (q *deadQuery) pageSQL(cols string, after *deadCursor, desc bool, limit int) string {
	return q.pageQuery(cols, after, desc, limit, false)
}

// pageQuery is pageSQL, or with perDLQ the rows it chooses from: up to
// limit of each DLQ, in order within each DLQ only.
func (q *deadQuery) pageQuery(cols string, after *deadCursor, desc bool, limit int, perDLQ bool) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	lim := q.arg(limit)
	var more func(string) string
	if after != nil {
		// The cursor's id is a parameter only where the cursor's DLQ is
		// queried: once that DLQ is dropped, an unused parameter would
		// leave PostgreSQL unable to type it.
		t, id := q.arg(after.T), ""
		idArg := func() string {
			if id == "" {
				id = q.arg(after.I)
			}
			return id
		}
		more = func(dlq string) string { return deadKeysetCond(dlq, after, desc, t, idArg) }
	}
	inner := q.union(cols, more, "ORDER BY enqueued_at"+dir+", msg_id"+dir+" LIMIT "+lim)
	if perDLQ {
		return inner
	}
	return "SELECT * FROM (" + inner + ") u ORDER BY enqueued_at" + dir + `, dlq COLLATE "C"` + dir + ", msg_id" + dir + " LIMIT " + lim
}

// largestSQL is pageSQL in the order of DeadLargest: (payload size,
// enqueued_at, dlq, msg_id), descending, after the cursor.
func (q *deadQuery) largestSQL(cols string, after *deadCursor, limit int) string {
	lim := q.arg(limit)
	var more func(string) string
	if after != nil {
		// As pageQuery's: the cursor's id is a parameter only where its
		// DLQ is queried.
		b, t, id := q.arg(after.B-1), q.arg(after.T), ""
		more = func(dlq string) string {
			switch c := strings.Compare(dlq, after.Q); {
			case c == 0:
				if id == "" {
					id = q.arg(after.I)
				}
				return "(" + sqlPayloadBytes + ", enqueued_at, msg_id) < (" + b + ", " + t + ", " + id + ")"
			case c < 0:
				return "(" + sqlPayloadBytes + ", enqueued_at) <= (" + b + ", " + t + ")"
			default:
				return "(" + sqlPayloadBytes + ", enqueued_at) < (" + b + ", " + t + ")"
			}
		}
	}
	inner := q.union(cols, more, "ORDER BY payload_bytes DESC, enqueued_at DESC, msg_id DESC LIMIT "+lim)
	return "SELECT * FROM (" + inner + `) u ORDER BY payload_bytes DESC, enqueued_at DESC, dlq COLLATE "C" DESC, msg_id DESC LIMIT ` + lim
}

// decodeDeadCursor checks cursor against the database's key and filter;
// an empty cursor is the first page (nil).
func (s *Store) decodeDeadCursor(ctx context.Context, cursor, filter string) (*deadCursor, error) {
	return s.decodeSignedCursor(ctx, cursor, filter, inDLQ)
}

// decodeSignedCursor checks cursor against the database's key, filter and
// place; an empty cursor is the first page (nil).
func (s *Store) decodeSignedCursor(ctx context.Context, cursor, filter string, place func(*deadCursor) bool) (*deadCursor, error) {
	if cursor == "" {
		return nil, nil
	}
	key, err := s.cursorKey(ctx)
	if err != nil {
		return nil, err
	}
	return decodeSignedCursor(key, cursor, filter, place)
}

// DeadCursorClock returns the instant the ages of the filter of a cursor
// of ListDead, ListDiscarded or ListHandlerDiscarded counted back from
// (DeadFilter.Clock), zero for a filter without ages. A cursor this
// database's pgbus did not issue, or one changed since, is refused as
// ListDead refuses it.
func (s *Store) DeadCursorClock(ctx context.Context, cursor string) (time.Time, error) {
	return s.cursorClock(ctx, cursor, func(c *deadCursor) bool { return inDLQ(c) || inQueueArchive(c) })
}

// AuditCursorClock is DeadCursorClock for a cursor of ListAudit
// (AuditFilter.Clock).
func (s *Store) AuditCursorClock(ctx context.Context, cursor string) (time.Time, error) {
	return s.cursorClock(ctx, cursor, inAuditLog)
}

func (s *Store) cursorClock(ctx context.Context, cursor string, place func(*deadCursor) bool) (time.Time, error) {
	key, err := s.cursorKey(ctx)
	if err != nil {
		return time.Time{}, err
	}
	c, err := openSignedCursor(key, cursor, place)
	if err != nil || c.P == 0 {
		return time.Time{}, err
	}
	return time.UnixMicro(c.P).UTC(), nil
}

// DeadGroupCursor returns the cursor of the place after g in the order
// of a summary of f (SummaryOptions.Cursor): largest first, then newest,
// then by DLQ and key. It is signed with the database's key, bound to f
// and to the instant f's ages counted back from (f.Clock), which
// SummaryCursorClock gives back.
func (s *Store) DeadGroupCursor(ctx context.Context, f DeadFilter, g DeadGroup) (string, error) {
	if g.Count < 1 || g.LastDeadAt.IsZero() || !IsGroupKey(g.Group) || !isDLQName(g.DLQ) {
		return "", fmt.Errorf("store: cursor of group %q of %q: not a group a summary returned", g.Group, g.DLQ)
	}
	key, err := s.cursorKey(ctx)
	if err != nil {
		return "", err
	}
	c := deadCursor{V: deadCursorVersion, T: g.LastDeadAt.UTC(), Q: g.DLQ, I: g.Count, F: f.fingerprint(), G: g.Group}
	if !f.Clock.IsZero() {
		c.P = f.Clock.UnixMicro()
	}
	c.M = c.mac(key)
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// SummaryCursorClock is DeadCursorClock for a summary's cursor
// (DeadGroupCursor).
func (s *Store) SummaryCursorClock(ctx context.Context, cursor string) (time.Time, error) {
	return s.cursorClock(ctx, cursor, inSummary)
}
