package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Why a message of a DLQ's archive is not restored (RestoreRefusal.Why).
const (
	// RestoreNotArchived: the id is in neither the archive nor the DLQ:
	// purged, pruned by retention, or never a message of this DLQ.
	RestoreNotArchived = "not_archived"
	// RestoreInDLQ: the id is in the DLQ itself: restored already, or
	// never discarded.
	RestoreInDLQ = "in_dlq"
	// RestoreRetryOriginal: the archived row is the original of a message
	// retried with a corrected payload; the corrected one ran, so
	// restoring the original would run the job twice.
	RestoreRetryOriginal = "retry_original"
)

// DiscardedFilter selects messages of a DLQ's archive. Zero fields select
// everything.
type DiscardedFilter struct {
	// Since (inclusive) and Until (exclusive) bound the archive time.
	Since time.Time
	Until time.Time
	// Kind and ErrorClass match as DeadFilter's do.
	Kind       string
	ErrorClass string
	// Clock is as DeadFilter's: signed into ListDiscarded's next cursor.
	Clock time.Time
}

// DiscardedItem is one message of a DLQ's archive: discarded, or the
// original of a retry with a corrected payload (RetryOriginal), which is
// kept to be read but not restored.
type DiscardedItem struct {
	DLQ string `json:"dlq,omitempty"`
	// Queue is, for a message a handler discarded (ListHandlerDiscarded),
	// the physical queue whose archive holds it; empty for a DLQ's.
	Queue          string    `json:"queue,omitempty"`
	MsgID          int64     `json:"msg_id"`
	Kind           string    `json:"kind,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	SourceQueue    string    `json:"source_queue,omitempty"`
	ErrorClass     string    `json:"error_class,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty"`
	DeadLetteredAt time.Time `json:"dead_lettered_at,omitzero"`
	ArchivedAt     time.Time `json:"archived_at"`
	RetryOriginal  bool      `json:"retry_original,omitempty"`
}

// RestoreRefusal is one id RestoreDead did not restore, and why (one of
// the Restore* reasons).
type RestoreRefusal struct {
	MsgID int64  `json:"msg_id"`
	Why   string `json:"why"`
}

// RestoreReport tells what RestoreDead did, or in a dry run would do.
type RestoreReport struct {
	DLQ      string           `json:"dlq"`
	DryRun   bool             `json:"dry_run"`
	Restored []int64          `json:"restored"`
	Refused  []RestoreRefusal `json:"refused"`
}

// sqlRetryOriginal is true for the archived row a of DLQ $2 that is the
// original of a retry with a corrected payload. Such a retry marks it in
// the history under the DLQ and its id (a row of class
// PayloadReplacedClass whose text begins with retryMarkPrefix: the
// corrected message's own note has the same class, and follows it back
// into the DLQ under its new id when it dies again); an original kept before that
// mark was written has no history there (the retry took it along) and
// is named by the note the retry left on the corrected message, while
// that message is still known. The CASE evaluates in order, so the note
// is looked for only for rows without history.
//
// The note begins with $3, the id and ')'. PostgreSQL takes starts_with
// to an index only for a constant prefix, so the note is looked up in the
// index of migration 19 (failures_payload_replaced_idx: the notes' first
// 256 characters in byte order) as a range: the texts from that beginning
// up to the same ending in '*', the character after ')', are those that
// begin so. starts_with says it of the whole message.
const sqlRetryOriginal = `CASE
	WHEN EXISTS (SELECT 1 FROM pgbus.failures f WHERE f.queue_name = $2::text AND f.msg_id = a.msg_id
		AND f.error_class = '` + PayloadReplacedClass + `' AND starts_with(f.error_message, '` + retryMarkPrefix + `')) THEN true
	WHEN EXISTS (SELECT 1 FROM pgbus.failures f WHERE f.queue_name = $2::text AND f.msg_id = a.msg_id) THEN false
	ELSE EXISTS (SELECT 1 FROM pgbus.failures f WHERE f.error_class = '` + PayloadReplacedClass + `'
		AND left(f.error_message, 256) COLLATE "C" >= ($3::text || a.msg_id || ')')
		AND left(f.error_message, 256) COLLATE "C" < ($3::text || a.msg_id || '*')
		AND starts_with(f.error_message, $3::text || a.msg_id || ')'))
	END`

// retryMarkPrefix is how the mark of the original of a retry with a
// corrected payload begins (deadRetrySQL), as every version wrote it.
const retryMarkPrefix = "retried with a corrected payload as message "

// replacedNotePrefix is how the note of a retry with a corrected payload
// begins for an original kept in dlq's archive, up to its id.
func replacedNotePrefix(dlq string) string {
	return fmt.Sprintf("payload replaced on retry; the original message is kept in the archive of %s (pgmq.a_%s, msg_id ", dlq, dlq)
}

// DiscardedPage is one page of a DLQ's archive.
type DiscardedPage struct {
	Items []DiscardedItem
	// NextCursor, when more match, is ListDiscarded's cursor for the next
	// page, with the same DLQ and filter.
	NextCursor string
}

// fingerprint names the DLQ and filter a cursor of ListDiscarded is for.
func (f DiscardedFilter) fingerprint(dlq string) string {
	return fmt.Sprintf("discarded %s %d %d %q %q", dlq, f.Since.UnixMicro(), f.Until.UnixMicro(), f.Kind, f.ErrorClass)
}

// ListDiscarded returns up to limit (1 to MaxDeadPage) messages of dlq's
// archive that f selects, most recently archived first: the first page
// for an empty cursor, else the page after the one whose NextCursor it
// is. Error messages are as stored: the caller redacts them.
func (s *Store) ListDiscarded(ctx context.Context, dlq string, f DiscardedFilter, cursor string, limit int) (DiscardedPage, error) {
	page := DiscardedPage{Items: []DiscardedItem{}}
	if limit < 1 || limit > MaxDeadPage {
		return page, invalidf("list discarded messages: limit %d is out of range; pass 1 to %d", limit, MaxDeadPage)
	}
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return page, err
	}
	fp := f.fingerprint(name)
	after, err := s.decodeDeadCursor(ctx, cursor, fp)
	if err != nil {
		return page, err
	}
	if after != nil && after.Q != name {
		return page, errBadCursor
	}
	f.ErrorClass = s.textFit(ctx).apply(f.ErrorClass) // as stored (textFit)
	sql, args := listDiscardedSQL(name, f, after, limit)
	rows, err := s.reads.Query(ctx, sql, args...)
	if err != nil {
		return page, s.archiveErr(ctx, err, "list the archive of", name)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DiscardedItem, error) {
		it := DiscardedItem{DLQ: name}
		// The block's time is read in Go, as every other view reads it,
		// never cast in SQL, where a time without an offset would be read
		// in the session's TimeZone and one that is no date would fail the
		// whole list.
		var dead []byte
		err := r.Scan(&it.MsgID, &it.Kind, &it.Reason, &it.SourceQueue, &it.ErrorClass, &it.ErrorMessage, &dead, &it.ArchivedAt, &it.RetryOriginal)
		if b := parseDeadBlock(dead); b != nil {
			it.DeadLetteredAt = b.DeadLetteredAt
		}
		return it, err
	})
	if err != nil {
		return page, s.archiveErr(ctx, err, "list the archive of", name)
	}
	return s.discardedPage(ctx, items, limit, name, fp, f.Clock)
}

// listDiscardedSQL is ListDiscarded's query: $1 the limit plus one, $2
// the DLQ, $3 the note prefix, then the filter's values and the position
// of the cursor, when there is one.
func listDiscardedSQL(dlq string, f DiscardedFilter, after *deadCursor, limit int) (string, []any) {
	args := []any{limit + 1, dlq, replacedNotePrefix(dlq)}
	var where []string
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if !f.Since.IsZero() {
		add("a.archived_at >= $%d", f.Since)
	}
	if !f.Until.IsZero() {
		add("a.archived_at < $%d", f.Until)
	}
	if f.Kind != "" {
		add("coalesce(a.headers->>'"+HeaderKind+"', a.message->>'job_class', '') = $%d::text", f.Kind)
	}
	if f.ErrorClass != "" {
		add("a.headers->'"+HeaderDeadLetter+"'->>'error_class' = $%d::text", f.ErrorClass)
	}
	if after != nil {
		args = append(args, after.T, after.I)
		where = append(where, fmt.Sprintf("(a.archived_at, a.msg_id) < ($%d, $%d)", len(args)-1, len(args)))
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	block := `a.headers->'` + HeaderDeadLetter + `'`
	return `SELECT a.msg_id, coalesce(a.headers->>'` + HeaderKind + `', a.message->>'job_class', ''),
		coalesce(` + block + `->>'reason', ''), coalesce(` + block + `->>'source_queue', ''),
		coalesce(` + block + `->>'error_class', ''), coalesce(` + block + `->>'error_message', ''),
		jsonb_build_object('dead_lettered_at', ` + block + `->'dead_lettered_at'),
		a.archived_at, ` + sqlRetryOriginal + `
		FROM ` + archiveTable(dlq) + ` a ` + cond + `
		ORDER BY a.archived_at DESC, a.msg_id DESC LIMIT $1`, args
}

// RestoreDead moves discarded messages of dlq (a DLQ or its queue) from
// its archive back into the DLQ, each with its id, payload, headers (its
// dead-letter block among them) and failure history as they were, in one
// transaction. An id not in the archive, or the original of a retry with
// a corrected payload, is refused with why. The DLQ's group counts follow
// the rows (their triggers count the insert). A dry run changes nothing.
func (s *Store) RestoreDead(ctx context.Context, dlq string, ids []int64, dryRun bool) (RestoreReport, error) {
	rep, name, err := s.restoreReport(ctx, dlq, ids, dryRun)
	if err != nil {
		return rep, err
	}
	cols, err := s.restoreColumns(ctx, name)
	if err != nil {
		return rep, err
	}
	ids = deadUniqueIDs(ids)
	err = pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{}, func(tx pgx.Tx) error {
		rep.Restored, rep.Refused = rep.Restored[:0], rep.Refused[:0]
		ok, err := s.restoreSort(ctx, tx, name, ids, &rep)
		if err != nil || dryRun || len(ok) == 0 {
			return err
		}
		return restoreRows(ctx, tx, name, cols, ok)
	})
	if err != nil {
		return rep, s.archiveErr(ctx, err, "restore to", name)
	}
	return rep, nil
}

// restoreColumns lists the columns a restored row carries over: those of
// both tables.
func (s *Store) restoreColumns(ctx context.Context, dlq string) (string, error) {
	info, err := s.tableInfo(ctx, dlq)
	if err != nil {
		return "", err
	}
	cols := "msg_id, read_ct, enqueued_at, vt, message, headers"
	if info.archiveHasLastReadAt && info.queueHasLastReadAt {
		cols += ", last_read_at"
	}
	return cols, nil
}

// restoreSort locks the archived rows of ids, so that a purge or another
// restore under way waits for this one, or this one for it, then sorts
// the ids into those to restore, returned, and those refused, added to
// rep.
func (s *Store) restoreSort(ctx context.Context, tx pgx.Tx, dlq string, ids []int64, rep *RestoreReport) ([]int64, error) {
	if _, err := tx.Exec(ctx, `SELECT msg_id FROM `+archiveTable(dlq)+` WHERE msg_id = ANY($1) ORDER BY msg_id FOR UPDATE`, ids); err != nil {
		return nil, err
	}
	sql, args := restoreSortSQL(dlq, ids)
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return sortRestore(rows, rep)
}

// restoreReport is the empty report of a restore of ids to dlq (a DLQ or
// its queue), with the DLQ's name, once the DLQ and ids are checked.
func (s *Store) restoreReport(ctx context.Context, dlq string, ids []int64, dryRun bool) (RestoreReport, string, error) {
	rep := RestoreReport{DryRun: dryRun, Restored: []int64{}, Refused: []RestoreRefusal{}}
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return rep, "", err
	}
	rep.DLQ = name
	return rep, name, validateIDs("restore to", name, ids)
}

// PreviewRestore sorts ids as a restore to dlq (a DLQ or its queue) would
// now, reading only, without the locks RestoreDead takes: for a caller
// that may not write, which checks a restore before it asks someone who
// may. Its report is a dry run's.
func (s *Store) PreviewRestore(ctx context.Context, dlq string, ids []int64) (RestoreReport, error) {
	rep, name, err := s.restoreReport(ctx, dlq, ids, true)
	if err != nil {
		return rep, err
	}
	sql, args := restoreSortSQL(name, deadUniqueIDs(ids))
	rows, err := s.reads.Query(ctx, sql, args...)
	if err == nil {
		_, err = sortRestore(rows, &rep)
	}
	if err != nil {
		return rep, s.archiveErr(ctx, err, "restore to", name)
	}
	return rep, nil
}

// sortRestore reads the rows of restoreSortSQL: the ids to restore,
// returned, and those refused, added to rep.
func sortRestore(rows pgx.Rows, rep *RestoreReport) ([]int64, error) {
	var ok []int64
	var id int64
	var original *bool
	var live bool
	_, err := pgx.ForEachRow(rows, []any{&id, &original, &live}, func() error {
		switch {
		case original == nil && live:
			rep.Refused = append(rep.Refused, RestoreRefusal{MsgID: id, Why: RestoreInDLQ})
		case original == nil:
			rep.Refused = append(rep.Refused, RestoreRefusal{MsgID: id, Why: RestoreNotArchived})
		case *original:
			rep.Refused = append(rep.Refused, RestoreRefusal{MsgID: id, Why: RestoreRetryOriginal})
		default:
			ok = append(ok, id)
			rep.Restored = append(rep.Restored, id)
		}
		return nil
	})
	return ok, err
}

// restoreSortSQL is restoreSort's query: for each of ids, whether its
// archived row is the original of a retry with a corrected payload (NULL
// when it is not archived) and whether it is in the DLQ.
func restoreSortSQL(dlq string, ids []int64) (string, []any) {
	return `SELECT t.id,
			(SELECT ` + sqlRetryOriginal + ` FROM ` + archiveTable(dlq) + ` a WHERE a.msg_id = t.id),
			EXISTS (SELECT 1 FROM ` + queueTable(dlq) + ` q WHERE q.msg_id = t.id)
		FROM unnest($1::bigint[]) AS t(id)
		ORDER BY t.id`, []any{ids, dlq, replacedNotePrefix(dlq)}
}

// restoreRows moves the archived rows of ids into the DLQ with their own
// ids, which the DLQ's identity column takes only when told to.
func restoreRows(ctx context.Context, tx pgx.Tx, dlq, cols string, ids []int64) error {
	tag, err := tx.Exec(ctx, `WITH d AS (
			DELETE FROM `+archiveTable(dlq)+` WHERE msg_id = ANY($1::bigint[])
			RETURNING `+cols+`)
		INSERT INTO `+queueTable(dlq)+` (`+cols+`) OVERRIDING SYSTEM VALUE
		SELECT `+cols+` FROM d`, ids)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != int64(len(ids)) {
		return changed(fmt.Sprintf("%d of the archived messages of %s went while they were being restored", len(ids)-int(tag.RowsAffected()), dlq), "nothing was restored: try again")
	}
	return nil
}
