package store

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

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
	return "SELECT * FROM (" + inner + ") u ORDER BY enqueued_at" + dir + `, dlq COLLATE "C"` + dir + ", msg_id" + dir + " LIMIT " + lim
}
