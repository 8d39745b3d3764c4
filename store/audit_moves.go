package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeadMove is an audit entry's record of a dead message that a retry or
// a discard took out of its DLQ.
type DeadMove struct {
	AuditID int64
	At      time.Time
	Client  string
	// Tool is the audit entry's tool: the retry's or the discard's.
	Tool string
	DLQ  string
	// Queue and MsgID are where a retry put the message: its queue and
	// its new id there; empty and 0 for a discard, which archived it in
	// its DLQ under its id.
	Queue string
	MsgID int64
}

// deadMovesScanned bounds how many of the newest retry and discard
// entries a look for moves reads: an id no entry names would otherwise
// cost a scan of the whole log.
const deadMovesScanned = 10000

// DeadMoves returns, for each of ids that an audit entry of retryTool or
// discardTool records as moved out of dlq ("" for any DLQ), the newest
// such move. It reads what the entries' results list: the moved messages
// (moved: dlq, and dlq_msg_id or msg_id) and the outcomes of a call by
// ids (outcomes: id, dlq, outcome retried or discarded); a dry run's
// moved nothing. Entries that listed only the first moves leave the
// others out, as do those older than the newest deadMovesScanned, and so
// does a discard whose message is no longer in its DLQ's archive.
func (s *Store) DeadMoves(ctx context.Context, dlq string, ids []int64, retryTool, discardTool string) (map[int64]DeadMove, error) {
	out := map[int64]DeadMove{}
	if len(ids) == 0 {
		return out, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = strconv.FormatInt(id, 10)
	}
	rows, err := s.reads.Query(ctx, `
		SELECT DISTINCT ON (x.msg) x.msg, a.id, a.at, a.client, a.tool, x.dlq, x.queue, x.new_id
		FROM (SELECT id, at, client, tool, result FROM pgbus.audit_log
			WHERE tool IN ($3, $4) AND NOT is_error AND coalesce(result->>'dry_run', '') <> 'true'
			ORDER BY id DESC LIMIT $5) a
		CROSS JOIN LATERAL (
			SELECT CASE WHEN a.tool = $3 THEN e->>'dlq_msg_id' ELSE e->>'msg_id' END AS msg, e->>'dlq' AS dlq,
				CASE WHEN a.tool = $3 THEN coalesce(e->>'queue', '') ELSE '' END AS queue,
				CASE WHEN a.tool = $3 THEN coalesce(e->>'msg_id', '') ELSE '' END AS new_id
			FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.result->'moved') = 'array' THEN a.result->'moved' ELSE '[]' END) e
			UNION ALL
			SELECT e->>'id', e->>'dlq', coalesce(e->>'queue', ''), coalesce(e->>'new_msg_id', '')
			FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.result->'outcomes') = 'array' THEN a.result->'outcomes' ELSE '[]' END) e
			WHERE e->>'outcome' IN ('retried', 'discarded')
		) x
		WHERE x.msg = ANY($1::text[]) AND ($2 = '' OR x.dlq = $2)
		ORDER BY x.msg, a.id DESC`, keys, dlq, retryTool, discardTool, deadMovesScanned)
	if err != nil {
		return nil, fmt.Errorf("store: look in the audit log for the moves of dead messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m DeadMove
		var msg, newID string
		if err := rows.Scan(&msg, &m.AuditID, &m.At, &m.Client, &m.Tool, &m.DLQ, &m.Queue, &newID); err != nil {
			return nil, fmt.Errorf("store: look in the audit log for the moves of dead messages: %w", err)
		}
		id, err := strconv.ParseInt(msg, 10, 64)
		if err != nil {
			continue // not an id pgbus wrote
		}
		m.MsgID, _ = strconv.ParseInt(newID, 10, 64)
		out[id] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: look in the audit log for the moves of dead messages: %w", err)
	}
	return out, s.dropUndoneDiscards(ctx, out, discardTool)
}

// dropUndoneDiscards leaves out of moves the discards whose message is no
// longer in its DLQ's archive: restored since (and maybe retried, by a
// filter the log does not list the ids of) or purged, the discard is not
// where it went, and a restore would not find it.
func (s *Store) dropUndoneDiscards(ctx context.Context, moves map[int64]DeadMove, discardTool string) error {
	byDLQ := map[string][]int64{}
	for id, m := range moves {
		if m.Tool == discardTool {
			byDLQ[m.DLQ] = append(byDLQ[m.DLQ], id)
		}
	}
	for dlq, ids := range byDLQ {
		if ValidatePhysicalName(dlq) != nil {
			for _, id := range ids {
				delete(moves, id)
			}
			continue
		}
		held := map[int64]bool{}
		rows, err := s.reads.Query(ctx, `SELECT msg_id FROM `+archiveTable(dlq)+` WHERE msg_id = ANY($1)`, ids)
		if err != nil && !isUndefinedTable(err) {
			return fmt.Errorf("store: look for discarded dead messages in the archive of %s: %w", dlq, err)
		}
		if err == nil {
			kept, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil && !isUndefinedTable(err) {
				return fmt.Errorf("store: look for discarded dead messages in the archive of %s: %w", dlq, err)
			}
			for _, id := range kept {
				held[id] = true
			}
		}
		for _, id := range ids {
			if !held[id] {
				delete(moves, id)
			}
		}
	}
	return nil
}
