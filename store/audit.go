package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgbus/pgbus/internal/plural"
)

// AuditEntry is one write operation, by an agent or a person.
type AuditEntry struct {
	ID        int64           `json:"id"`
	At        time.Time       `json:"at"`
	Client    string          `json:"client"`
	Transport string          `json:"transport"`
	Principal string          `json:"principal"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	IsError   bool            `json:"is_error"`
	// Pending marks an entry written before its operation's work (by
	// StartAudit), which no entry has completed: the operation is still
	// running, or its process stopped before it could record the outcome.
	// ListAudit leaves out a pending entry once one completes it.
	Pending bool `json:"pending,omitempty"`
	// Completes, on the entry of an operation's outcome, is the id of the
	// pending entry StartAudit wrote for it; 0 for none.
	Completes int64 `json:"completes,omitempty"`
	// RunPID and RunKey, on a pending entry, name the session its
	// operation holds while it runs (AuditRun); 0 for none: an entry of an
	// older pgbus, or of an operation that could not hold one.
	RunPID int32 `json:"run_pid,omitempty"`
	RunKey int32 `json:"run_key,omitempty"`
}

// AuditFilter selects audit entries. Zero fields select everything.
type AuditFilter struct {
	Tool   string `json:"tool,omitempty"`
	Client string `json:"client,omitempty"`
	// ExceptTools leaves out the entries of these tools.
	ExceptTools []string `json:"except_tools,omitempty"`
	// Since, when set, leaves out entries recorded before it.
	Since time.Time `json:"since,omitzero"`
	// Clock, when Since was given as an age, is the instant it counted
	// back from, which the page's cursor carries (AuditCursorClock) so
	// that the age means the same on every page. No part of the filter.
	Clock time.Time `json:"-"`
}

// AuditPage is a page of audit entries, newest first.
type AuditPage struct {
	Items      []AuditEntry `json:"items"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

const maxAuditJSON = 16 << 10

// MaxAuditName bounds an audit entry's tool, client, transport and
// principal, in bytes.
const MaxAuditName = 200

// RecordAudit stores one entry. Arguments and results over 16 KB are kept as
// a note of their size, not in full. The entry is dated by the database's
// clock, unless At is set: an entry written later than its operation (held
// while the database did not answer) keeps the time the operation ended.
func (s *Store) RecordAudit(ctx context.Context, e AuditEntry) error {
	return s.RecordAudits(ctx, []AuditEntry{e})
}

// StartAudit stores e as a pending entry, before its operation's work,
// and returns its id: a process killed before the work ends leaves it,
// saying what was asked and by whom. The entry that records the outcome
// names it in Completes, and ListAudit then shows that one alone. The log
// stays append-only: the pending entry is never changed (an operation
// that tells how far it went writes another, SendRoutedNoted, which
// replaces it as an outcome would). e's result and error flag are not
// stored; it is dated by the database's clock. e's
// RunPID and RunKey, when set, name the session its operation holds while
// it runs (HoldAuditRun).
func (s *Store) StartAudit(ctx context.Context, e AuditEntry) (int64, error) {
	if err := CheckAuditEntry(e); err != nil {
		return 0, err
	}
	if e.Client == "" {
		e.Client = "unknown"
	}
	var id int64
	var pid, key *int32
	if e.RunPID != 0 {
		pid, key = &e.RunPID, &e.RunKey
	}
	err := s.db.QueryRow(ctx, `INSERT INTO pgbus.audit_log (client, transport, principal, tool, arguments, pending, run_pid, run_key)
		VALUES ($1, $2, $3, $4, $5, true, $6, $7) RETURNING id`, e.Client, e.Transport, e.Principal, e.Tool, boundedJSON(e.Arguments), pid, key).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: record the start of %s in the audit log: %w", e.Tool, err)
	}
	return id, nil
}

// RecordAudits stores entries in their order, all or none: in one
// transaction, so that an attempt that fails leaves none of them written
// for the next attempt to write again.
func (s *Store) RecordAudits(ctx context.Context, entries []AuditEntry) error {
	for _, e := range entries {
		if err := CheckAuditEntry(e); err != nil {
			return err
		}
	}
	if len(entries) == 0 {
		return nil
	}
	const insert = `INSERT INTO pgbus.audit_log (client, transport, principal, tool, arguments, result, is_error, at, completes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8, now()), $9)`
	args := func(e AuditEntry) []any {
		if e.Client == "" {
			e.Client = "unknown"
		}
		var at *time.Time
		if !e.At.IsZero() {
			at = &e.At
		}
		var completes *int64
		if e.Completes != 0 {
			completes = &e.Completes
		}
		return []any{e.Client, e.Transport, e.Principal, e.Tool, boundedJSON(e.Arguments), boundedJSON(e.Result), e.IsError, at, completes}
	}
	if len(entries) == 1 {
		if _, err := s.db.Exec(ctx, insert, args(entries[0])...); err != nil {
			return fmt.Errorf("store: record audit entry for %s: %w", entries[0].Tool, err)
		}
		return nil
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, e := range entries {
			b.Queue(insert, args(e)...)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("store: record %s: %w", plural.Count(len(entries), "audit entry", "audit entries"), err)
	}
	return nil
}

// CheckAuditEntry refuses, with ErrInvalid, an entry RecordAudit would
// refuse whenever it is tried: its names are empty or too long.
func CheckAuditEntry(e AuditEntry) error {
	if e.Tool == "" || len(e.Tool) > MaxAuditName || len(e.Client) > MaxAuditName || len(e.Transport) > MaxAuditName || len(e.Principal) > MaxAuditName {
		return invalidf("audit entry: tool must be 1 to %d bytes, and client, transport and principal at most %d", MaxAuditName, MaxAuditName)
	}
	return nil
}

// auditPruneBatch is how many audit entries one statement of PruneAudit
// deletes. Each batch is a transaction of its own, so that the first prune
// of a large log holds no long transaction and no lock on many rows. A
// variable so that tests can lower it.
var auditPruneBatch = 5000

// PruneAudit deletes, oldest first and in batches, the audit entries
// recorded longer ago than olderThan, and returns how many went. Each
// batch finds its entries through the index on the time (audit_log_at_idx)
// from the time where the last batch ended: walking the index from its
// start again would pass over the entries of every entry deleted so far in
// the prune, which stay until vacuum and which a transaction held open
// elsewhere (a backup's) keeps, so that each batch of a large first prune
// read more than the last. It deletes them by their ids (an array, so
// that the plan is a lookup of each in the primary key, never a scan of
// the whole log).
func (s *Store) PruneAudit(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan <= 0 {
		return 0, invalidf("prune the audit log: age must be positive, not %s", olderThan)
	}
	var total int64
	from := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		var picked, deleted int64
		if err := s.db.QueryRow(ctx, pruneAuditSQL, olderThan.Microseconds(), auditPruneBatch, from).Scan(&picked, &deleted, &from); err != nil {
			return total, fmt.Errorf("store: retention: prune the audit log: %w", err)
		}
		total += deleted
		if picked < int64(auditPruneBatch) {
			return total, nil
		}
	}
}

// pruneAuditSQL is one batch of PruneAudit: $1 the age in microseconds,
// $2 the batch size, $3 the time the last batch ended at (entries of that
// time not yet deleted are picked again). It returns how many entries it
// picked, how many went, and where the next batch starts.
const pruneAuditSQL = `WITH pick AS MATERIALIZED (
		SELECT id, at FROM pgbus.audit_log
		WHERE at < now() - $1 * interval '1 microsecond' AND at >= $3
		ORDER BY at LIMIT $2
	), d AS (
		DELETE FROM pgbus.audit_log WHERE id = ANY(ARRAY(SELECT id FROM pick))
		RETURNING 1
	)
	SELECT (SELECT count(*) FROM pick), (SELECT count(*) FROM d), coalesce((SELECT max(at) FROM pick), $3)`

func boundedJSON(raw json.RawMessage) string {
	if len(raw) == 0 || !json.Valid(raw) {
		return "{}"
	}
	if len(raw) > maxAuditJSON {
		return fmt.Sprintf(`{"truncated": true, "bytes": %d}`, len(raw))
	}
	return jsonbText(raw)
}

// ListAudit returns audit entries newest first; cursor is the NextCursor of
// the previous page.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter, cursor string, limit int) (AuditPage, error) {
	if limit < 1 || limit > 100 {
		return AuditPage{}, invalidf("audit: limit must be 1 to 100, not %d", limit)
	}
	fp := f.fingerprint()
	after, err := s.decodeSignedCursor(ctx, cursor, fp, inAuditLog)
	if err != nil {
		return AuditPage{}, err
	}
	before, mark := int64(1<<63-1), int64(0)
	if after != nil {
		before, mark = after.I, after.H
	}
	sql, args := auditListSQL(f, before, mark, limit)
	rows, err := s.reads.Query(ctx, sql, args...)
	if err != nil {
		return AuditPage{}, fmt.Errorf("store: list audit entries: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		var args, res []byte
		var highest int64
		err := r.Scan(&e.ID, &e.At, &e.Client, &e.Transport, &e.Principal, &e.Tool, &args, &res, &e.IsError, &e.Pending, &e.RunPID, &e.RunKey, &highest)
		if mark == 0 {
			mark = highest // the first page's
		}
		e.Arguments, e.Result = args, res
		return e, err
	})
	if err != nil {
		return AuditPage{}, fmt.Errorf("store: list audit entries: %w", err)
	}
	page := AuditPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		key, err := s.cursorKey(ctx)
		if err != nil {
			return AuditPage{}, err
		}
		last := page.Items[limit-1]
		page.NextCursor = encodeAuditCursor(key, last.At, last.ID, fp, f.Clock, mark)
	}
	return page, nil
}

// auditListSQL is the statement of one page of ListAudit and its
// arguments: entries below id before, at most limit+1 of them, with the
// first page's mark (0 on the first page itself). Its WHERE clause names only the
// filters given, so that each shape of filter is planned for itself, a
// cached statement's generic plan included: a tool or a client walks its
// own index on (tool, id) or (client, id), newest first, rather than the
// whole log by id, and a time its index on at.
func auditListSQL(f AuditFilter, before, mark int64, limit int) (string, []any) {
	// The completions a page sees: those at or below the first page's
	// mark, any on the first page itself.
	seen := mark
	if seen == 0 {
		seen = math.MaxInt64
	}
	args := []any{before, limit + 1, seen}
	where := []string{"id < $1"}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Tool != "" {
		add("tool = $%d", f.Tool)
	}
	if f.Client != "" {
		add("client = $%d", f.Client)
	}
	if len(f.ExceptTools) > 0 {
		add("NOT (tool = ANY($%d::text[]))", append([]string{}, f.ExceptTools...))
	}
	if !f.Since.IsZero() {
		add("at >= $%d", f.Since)
	}
	// A pending entry another completes is left out: the one that
	// completes it says what was asked and what came of it. On a later
	// page, only by a completion the first page could see (at or below
	// its mark, $3): one written since is above every page, and without
	// its pending entry the operation would be on none. The first
	// completion is a scalar subquery, looked up per pending entry through
	// the index on completes: an EXISTS the planner may hash, reading the
	// whole log on every page. An entry nothing completes has none (NULL),
	// and stays.
	where = append(where, "(NOT pending OR NOT coalesce((SELECT min(c.id) FROM pgbus.audit_log c WHERE c.completes = a.id) <= $3::bigint, false))")
	return `SELECT id, at, client, transport, principal, tool, arguments, result, is_error, pending,
			coalesce(run_pid, 0), coalesce(run_key, 0), (SELECT max(id) FROM pgbus.audit_log) FROM pgbus.audit_log a
		WHERE ` + strings.Join(where, "\n\t\t\tAND ") + `
		ORDER BY id DESC LIMIT $2`, args
}

// encodeAuditCursor is encodeDeadCursor for a cursor of ListAudit, with
// the mark of its listing's first page (deadCursor.H).
func encodeAuditCursor(key []byte, t time.Time, id int64, filter string, clock time.Time, mark int64) string {
	c := deadCursor{V: deadCursorVersion, T: t.UTC(), Q: auditCursorPlace, I: id, F: filter, H: mark}
	if !clock.IsZero() {
		c.P = clock.UnixMicro()
	}
	c.M = c.mac(key)
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// auditCursorPlace is the Q of an audit cursor, whose position is an id of
// the audit log: no DLQ's name, so that neither list takes the other's.
const auditCursorPlace = "pgbus.audit_log"

func inAuditLog(c *deadCursor) bool { return c.G == "" && c.Q == auditCursorPlace }

// fingerprint identifies a filter, so that a cursor is only used with the
// filter it was issued for: with another, its position would skip and
// repeat entries as if the page were right.
func (f AuditFilter) fingerprint() string {
	f.Since = f.Since.UTC()
	b, _ := json.Marshal(f)
	sum := sha256.Sum256(b)
	return "audit " + hex.EncodeToString(sum[:8])
}
