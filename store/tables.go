package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// tableInfo records which optional PGMQ columns a queue's tables have:
// last_read_at arrived in a later PGMQ version, and tables made by an older
// client lack it.
type tableInfo struct {
	queueHasLastReadAt   bool
	archiveHasLastReadAt bool
}

func (s *Store) tableInfo(ctx context.Context, queue string) (tableInfo, error) {
	if v, ok := s.tables.Load(queue); ok {
		return v.(tableInfo), nil
	}
	rows, err := s.reads.Query(ctx, `
		SELECT c.relname, EXISTS (
			SELECT 1 FROM pg_attribute a
			WHERE a.attrelid = c.oid AND a.attname = 'last_read_at' AND NOT a.attisdropped)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'pgmq' AND c.relname IN ($1, $2)`,
		"q_"+queue, "a_"+queue)
	if err != nil {
		return tableInfo{}, fmt.Errorf("store: inspect queue %q: %w", queue, err)
	}
	var info tableInfo
	found := false
	for rows.Next() {
		var table string
		var hasLastRead bool
		if err := rows.Scan(&table, &hasLastRead); err != nil {
			return tableInfo{}, fmt.Errorf("store: inspect queue %q: %w", queue, err)
		}
		if table == "q_"+queue {
			found, info.queueHasLastReadAt = true, hasLastRead
		} else {
			info.archiveHasLastReadAt = hasLastRead
		}
	}
	if err := rows.Err(); err != nil {
		return tableInfo{}, fmt.Errorf("store: inspect queue %q: %w", queue, err)
	}
	if !found {
		return tableInfo{}, queueErr(errUndefinedTable, "inspect", queue)
	}
	s.tables.Store(queue, info)
	return info, nil
}

func sortByID(msgs []Message) {
	slices.SortFunc(msgs, func(a, b Message) int { return cmp.Compare(a.ID, b.ID) })
}

func sortIDs(ids []int64) { slices.Sort(ids) }
