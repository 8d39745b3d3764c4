package store

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListHandlerDiscarded returns up to limit (1 to MaxDeadPage) messages that
// a handler's rule discarded from queue (engine.Discard, an http or exec
// handler's discard rule): kept in the archive of the queue, of each of
// its priority levels, marked with the pgbus_discarded header, and never
// dead-lettered. They come most recently discarded first, each with the
// last failure recorded for it (the one that discarded it) and the
// physical queue whose archive holds it: the first page for an empty
// cursor, else the page after the one whose NextCursor it is. f selects
// as for ListDiscarded, its ErrorClass matching that failure's class. No
// restore brings such a message back: it never was in the DLQ. A queue
// none of whose tables exists is ErrNotFound.
func (s *Store) ListHandlerDiscarded(ctx context.Context, queue string, f DiscardedFilter, cursor string, limit int) (DiscardedPage, error) {
	page := DiscardedPage{Items: []DiscardedItem{}}
	if limit < 1 || limit > MaxDeadPage {
		return page, invalidf("list discarded messages: limit %d is out of range; pass 1 to %d", limit, MaxDeadPage)
	}
	if err := ValidatePhysicalName(queue); err != nil {
		return page, err
	}
	if strings.HasSuffix(queue, DLQSuffix) {
		return page, invalidf("%s is a dead-letter queue: messages are discarded by a handler from the queue whose jobs it runs; give that queue, %s", queue, strings.TrimSuffix(queue, DLQSuffix))
	}
	physical, err := s.PhysicalQueues(ctx, queue)
	if err != nil {
		return page, err
	}
	there, err := s.deadExistingQueues(ctx, physical)
	if err != nil {
		return page, err
	}
	tables := make([]string, 0, len(physical))
	for _, p := range physical {
		if there[p] {
			tables = append(tables, p)
		}
	}
	if len(tables) == 0 {
		return page, notFoundf("queue %q does not exist", queue)
	}
	fp := "handler " + f.fingerprint(queue)
	after, err := s.decodeSignedCursor(ctx, cursor, fp, inQueueArchive)
	if err != nil {
		return page, err
	}
	f.ErrorClass = s.textFit(ctx).apply(f.ErrorClass) // as stored (textFit)
	sql, args := listHandlerDiscardedSQL(tables, f, after, limit)
	rows, err := s.reads.Query(ctx, sql, args...)
	if err != nil {
		return page, s.archiveErr(ctx, err, "list the discarded messages in the archive of", tables[0])
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DiscardedItem, error) {
		var it DiscardedItem
		err := r.Scan(&it.Queue, &it.MsgID, &it.Kind, &it.ErrorClass, &it.ErrorMessage, &it.ArchivedAt)
		return it, err
	})
	if err != nil {
		return page, s.archiveErr(ctx, err, "list the discarded messages in the archive of", tables[0])
	}
	return s.discardedPage(ctx, items, limit, "", fp, f.Clock)
}

// discardedPage is the page of items, read one past limit: the first
// limit of them, with the cursor after the last when there were more.
// The cursor names archive, or the last item's queue when archive is "".
func (s *Store) discardedPage(ctx context.Context, items []DiscardedItem, limit int, archive, fp string, clock time.Time) (DiscardedPage, error) {
	if len(items) <= limit {
		return DiscardedPage{Items: items}, nil
	}
	key, err := s.cursorKey(ctx)
	if err != nil {
		return DiscardedPage{Items: []DiscardedItem{}}, err
	}
	last := items[limit-1]
	page := DiscardedPage{Items: items[:limit]}
	page.NextCursor = encodeDeadCursor(key, last.ArchivedAt, cmp.Or(archive, last.Queue), last.MsgID, fp, clock)
	return page, nil
}

// listHandlerDiscardedSQL is ListHandlerDiscarded's query over the
// archives of tables: $1 the limit plus one, then the filter's values and
// the position of the cursor, when there is one. Each archive is read in
// its own arm, newest first through its index of archive times, and the
// arms are merged; the physical queue breaks ties, since each level has
// ids of its own.
func listHandlerDiscardedSQL(tables []string, f DiscardedFilter, after *deadCursor, limit int) (string, []any) {
	args := []any{limit + 1}
	param := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var common []string
	if !f.Since.IsZero() {
		common = append(common, "a.archived_at >= "+param(f.Since))
	}
	if !f.Until.IsZero() {
		common = append(common, "a.archived_at < "+param(f.Until))
	}
	kind := "coalesce(a.headers->>'" + HeaderKind + "', a.message->>'job_class', '')"
	if f.Kind != "" {
		common = append(common, kind+" = "+param(f.Kind)+"::text")
	}
	if f.ErrorClass != "" {
		common = append(common, "f.error_class = "+param(f.ErrorClass)+"::text")
	}
	var at, id, q string
	if after != nil {
		at, id, q = param(after.T), param(after.I), param(after.Q)
	}
	arms := make([]string, len(tables))
	for i, t := range tables {
		name := param(t)
		where := append([]string{"a.headers ? '" + HeaderDiscarded + "'"}, common...)
		if after != nil {
			where = append(where, fmt.Sprintf("(a.archived_at, a.msg_id, %s::text COLLATE \"C\") < (%s, %s, %s::text COLLATE \"C\")", name, at, id, q))
		}
		arms[i] = `(SELECT ` + name + `::text COLLATE "C" AS queue, a.msg_id, ` + kind + ` AS kind,
			coalesce(f.error_class, '') AS error_class, coalesce(f.error_message, '') AS error_message, a.archived_at
			FROM ` + archiveTable(t) + ` a
			LEFT JOIN LATERAL (SELECT f.error_class, f.error_message FROM pgbus.failures f
			                   WHERE f.queue_name = ` + name + `::text AND f.msg_id = a.msg_id
			                   ORDER BY f.attempt DESC LIMIT 1) f ON true
			WHERE ` + strings.Join(where, " AND ") + `
			ORDER BY a.archived_at DESC, a.msg_id DESC LIMIT $1)`
	}
	return `SELECT * FROM (` + strings.Join(arms, "\nUNION ALL\n") + `) u
		ORDER BY archived_at DESC, msg_id DESC, queue DESC LIMIT $1`, args
}
