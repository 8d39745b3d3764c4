package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

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
			return invalidf("filter %s is %d characters; at most %d are allowed", t.name, n, t.max)
		}
	}
	if f.Group != "" && !IsGroupKey(f.Group) {
		return invalidf("filter group %q is not a group's key: copy it from a summary's group (36 characters such as 4f9a0c7e-1b2d-3e4f-8a9b-0c1d2e3f4a5b)", shorten(f.Group))
	}
	if f.Reason != "" && f.Reason != ReasonNotRecorded {
		if err := validateDeadReason(f.Reason); err != nil {
			return invalidf("filter reason %q is unknown; use %s, %s, %s or %s", shorten(f.Reason), ReasonMaxRetriesExceeded, ReasonNonRetryable, ReasonDeadlineExceeded, ReasonNotRecorded)
		}
	}
	if f.MinPayloadBytes < 0 {
		return invalidf("filter min_payload_bytes %d is negative; pass 0 for every size, or a size in bytes", f.MinPayloadBytes)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return invalidf("filter until (%s) must be after since (%s)", f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	return nil
}

// IsGroupKey reports whether s is a group's key as DeadGroup.Group writes
// it: a uuid in lower-case hex.
func IsGroupKey(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// groupKeyText writes a group's key as DeadGroup.Group does.
func groupKeyText(k [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", k[0:4], k[4:6], k[6:8], k[8:10], k[10:])
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
	// text is the condition of the filter's text, one of conds, or "".
	text string
	// group is the parameter that holds the filter's group key, or "".
	group string
}

func (q *deadQuery) arg(v any) string {
	q.args = append(q.args, v)
	return fmt.Sprintf("$%d", len(q.args))
}

const sqlDeadBlock = `(headers->'` + HeaderDeadLetter + `')`

// sqlPayloadBytes is the size of a message's payload as JSON text, in
// bytes: DeadItem.PayloadBytes, and what DeadFilter.MinPayloadBytes and
// DeadLargest compare.
const sqlPayloadBytes = `coalesce(octet_length(message::text), 0)`

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
	// Error classes and messages are stored fitted to the database's
	// encoding (textFit: in LATIN1, Ошибка as \u041e...): they are searched
	// for as stored, so that the text a handler gave finds its dead
	// letters rather than being refused as characters the encoding lacks.
	fit := s.textFit(ctx)
	if f.Kind != "" {
		add(sqlDeadKind+` = %s`, f.Kind)
	}
	if f.ErrorClass != "" {
		add(sqlDeadBlock+`->>'error_class' = %s`, fit.apply(f.ErrorClass))
	}
	switch f.Reason {
	case "":
	case ReasonNotRecorded:
		q.conds = append(q.conds, `coalesce(`+sqlDeadBlock+`->>'reason', '') = ''`)
	default:
		add(sqlDeadBlock+`->>'reason' = %s`, f.Reason)
	}
	if !f.Since.IsZero() {
		add(`enqueued_at >= %s`, f.Since)
	}
	if !f.Until.IsZero() {
		add(`enqueued_at < %s`, f.Until)
	}
	if f.Group != "" {
		add(`pgbus.dlq_cause_key(headers, message) = %s::uuid`, f.Group)
		q.group = fmt.Sprintf("$%d", len(q.args))
	}
	if f.MinPayloadBytes > 0 {
		add(sqlPayloadBytes+` >= %s`, f.MinPayloadBytes)
	}
	if f.Text != "" {
		add(sqlDeadBlock+`->>'error_message' ILIKE %s ESCAPE E'\\'`, "%"+deadEscapeLike(fit.apply(f.Text))+"%")
		q.text = q.conds[len(q.conds)-1]
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

// deadChunk is how many DLQs one statement of a read over many DLQs
// reads. Reading a table locks it and each of its indexes (a DLQ's table
// has four) until the end of the transaction: a statement over every DLQ
// of a database of thousands of them asked for more locks than the
// server's lock table holds (max_locks_per_transaction, 64 a connection
// by default), and failed as out of shared memory. Sixteen DLQs take
// about 80 locks.
const deadChunk = 16

// chunk is q over dlqs alone, a part of q's DLQs, with parameters of its
// own from q's: what one statement of a read in chunks reads.
func (q *deadQuery) chunk(dlqs []string) *deadQuery {
	return &deadQuery{dlqs: dlqs, conds: q.conds, args: slices.Clone(q.args), text: q.text, group: q.group}
}

// inChunks runs read over dlqs deadChunk at a time, in order. In tx,
// each chunk is read after a savepoint, rolled back to once it is read,
// which releases the locks its statements took (PostgreSQL releases the
// locks taken since a savepoint rolled back to) while the transaction
// keeps its snapshot: a read in one snapshot holds the locks of one chunk
// at a time. Outside a transaction (tx nil) each chunk is read in
// statements of its own, whose locks end with them.
func inChunks(ctx context.Context, tx pgx.Tx, dlqs []string, read func(tx pgx.Tx, chunk []string) error) error {
	if tx == nil || len(dlqs) <= deadChunk {
		for chunk := range slices.Chunk(dlqs, deadChunk) {
			if err := read(tx, chunk); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT pgbus_chunk`); err != nil {
		return err
	}
	for chunk := range slices.Chunk(dlqs, deadChunk) {
		err := read(tx, chunk)
		// It only read; the savepoint stays, for the next chunk.
		if _, rerr := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT pgbus_chunk`); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `RELEASE SAVEPOINT pgbus_chunk`)
	return err
}

// deadReadAttempts bounds the reads of every DLQ that a DLQ dropped
// meanwhile cuts short. A database where queues come and go often (a
// service with a queue per tenant or per job, a test suite's) drops one
// between the listing and the read several times in a row now and then;
// the reads are spread over about 1.3 s.
const deadReadAttempts = 8

// QueuesChangedError is a read of every DLQ that found, at each of its
// reads, a DLQ it listed dropped before or while it read it: queues were
// created or dropped meanwhile, faster than the reads could keep up with.
// Nothing is wrong with the database; the same read again may succeed.
type QueuesChangedError struct {
	// Reads is how many times the DLQs were listed and read.
	Reads int
	// Err is the last read's failure: a DLQ's table not found, or gone
	// while the statement ran.
	Err error
}

// Error says that the queues changed during the read, and to try again.
func (e *QueuesChangedError) Error() string {
	return fmt.Sprintf("store: the queues changed during the read (queues were created or dropped meanwhile): each of %d reads of every DLQ found one dropped; try again (%v)", e.Reads, e.Err)
}

// Unwrap returns the last read's failure.
func (e *QueuesChangedError) Unwrap() error { return e.Err }

// runDead compiles f and runs fn on it. Over every DLQ, a DLQ dropped in the
// meantime (before fn's statement, or while it ran: droppedWhileRead) makes
// it list the DLQs again, up to deadReadAttempts reads; when each of them
// found one dropped, it returns a QueuesChangedError.
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
		if !isUndefinedTable(err) && !s.droppedWhileRead(ctx, err, q.dlqs) {
			return err
		}
		if f.Queue != "" {
			return s.dlqMissing(ctx, q.dlqs[0])
		}
		if attempt+1 >= deadReadAttempts {
			return &QueuesChangedError{Reads: deadReadAttempts, Err: err}
		}
		// Queues made and dropped in a burst (a test suite's, a tenant's
		// setup) drop another between each listing and read when read
		// again at once: a pause growing from 10ms to 640ms, 1.3s in all,
		// lets the burst pass.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond << attempt):
		}
	}
}

// droppedWhileRead reports whether err, of a statement reading the DLQs
// dlqs, is PostgreSQL failing to open a relation it had found (SQLSTATE
// XX000, "could not open relation with OID") because one of them was
// dropped while the statement ran: one of dlqs is gone now. It is told by
// the error's code and the catalog, not by the error's words, which
// lc_messages translates. Another internal error, or one the catalog
// cannot be asked about, is no dropped DLQ.
func (s *Store) droppedWhileRead(ctx context.Context, err error, dlqs []string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "XX000" {
		return false
	}
	there, lerr := s.deadExistingQueues(ctx, dlqs)
	return lerr == nil && len(there) < len(dlqs)
}

// wrapDead wraps database errors; the store's own kinds pass unchanged.
func wrapDead(op string, err error) error {
	if err == nil || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
