package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// sqlGroupHolders lists the DLQs a summary reads (deadQueues) that may
// hold a group of key $1: each whose group counts, which its triggers keep
// exact, hold a message of it, and each whose counts are not kept
// (untracked: its triggers off, or made by another PGMQ client), marked
// so, whose messages alone say. The counts are read once for every DLQ,
// by the key; whether a DLQ's counts are kept is read from the catalog as
// pgbus.dlq_groups_tracked reads it, inline, one index probe a DLQ.
const sqlGroupHolders = `
	WITH held AS MATERIALIZED (
		SELECT dlq FROM (SELECT dlq, count AS n FROM pgbus.dlq_groups WHERE group_key = $1::uuid
		                 UNION ALL
		                 SELECT dlq, delta FROM pgbus.dlq_group_deltas WHERE group_key = $1::uuid) c
		GROUP BY dlq HAVING sum(n) > 0
	)
	SELECT d.name, d.tracked FROM (
		SELECT m.queue_name AS name,
		       (SELECT count(*) FROM pg_catalog.pg_trigger t
		        WHERE t.tgrelid = r AND t.tgname IN ('pgbus_dlq_groups_ins', 'pgbus_dlq_groups_del', 'pgbus_dlq_groups_upd', 'pgbus_dlq_groups_trunc')
		          AND t.tgfoid = 'pgbus.dlq_groups_track()'::pg_catalog.regprocedure AND t.tgenabled IN ('O', 'A')) = 4 AS tracked
		FROM pgmq.meta m
		CROSS JOIN LATERAL to_regclass(format('%I.%I', 'pgmq', 'q_' || m.queue_name)) AS r
		WHERE m.queue_name LIKE E'%\\_dlq' AND r IS NOT NULL
		  AND has_table_privilege(r, 'SELECT')
		  AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = r AND a.attname = 'headers' AND NOT a.attisdropped)
		OFFSET 0
	) d
	WHERE NOT d.tracked OR d.name IN (SELECT dlq FROM held)
	ORDER BY d.name COLLATE "C"`

// DeadGroupHolders returns the DLQs that hold a dead message of the group
// whose key is key (a summary's DeadGroup.Group), by name byte by byte,
// of those a summary reads. It reads the group counts of every DLQ in one
// statement, whatever the number of DLQs and their messages: a summary by
// the key reads each DLQ's messages of the group. A DLQ whose counts are
// not kept (untracked, as a summary reads it message by message) is
// looked into by more statements, one a chunk of such DLQs (inChunks),
// only when there is one. A DLQ dropped meanwhile is read again, as a
// summary's DLQs are.
func (s *Store) DeadGroupHolders(ctx context.Context, key string) ([]string, error) {
	if !IsGroupKey(key) {
		return nil, DeadFilter{Group: key}.validate()
	}
	for attempt := 0; ; attempt++ {
		out, err := s.deadGroupHolders(ctx, key)
		if !isUndefinedTable(err) && !relationGone(err) {
			return out, wrapDead("find the DLQs that hold a group", err)
		}
		if attempt+1 >= deadReadAttempts {
			return nil, &QueuesChangedError{Reads: deadReadAttempts, Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, wrapDead("find the DLQs that hold a group", err)
		case <-time.After(10 * time.Millisecond << attempt):
		}
	}
}

func (s *Store) deadGroupHolders(ctx context.Context, key string) ([]string, error) {
	rows, err := s.reads.Query(ctx, sqlGroupHolders, key)
	if err != nil {
		return nil, err
	}
	var out, untracked []string
	var name string
	var tracked bool
	_, err = pgx.ForEachRow(rows, []any{&name, &tracked}, func() error {
		if ValidatePhysicalName(name) != nil {
			return nil // another PGMQ client's name, which no summary reads
		}
		if tracked {
			out = append(out, name)
		} else {
			untracked = append(untracked, name)
		}
		return nil
	})
	if err != nil || len(untracked) == 0 {
		return out, err
	}
	// A chunk of DLQs to a statement, as every read over many DLQs.
	err = inChunks(ctx, nil, untracked, func(_ pgx.Tx, chunk []string) error {
		parts := make([]string, len(chunk))
		args := []any{key}
		for i, dlq := range chunk {
			args = append(args, dlq)
			parts[i] = fmt.Sprintf(`(SELECT $%d::text AS dlq WHERE EXISTS (SELECT 1 FROM %s WHERE pgbus.dlq_cause_key(headers, message) = $1::uuid))`,
				len(args), queueTable(dlq))
		}
		rows, err := s.reads.Query(ctx, strings.Join(parts, "\nUNION ALL\n"), args...)
		if err != nil {
			return err
		}
		more, err := pgx.CollectRows(rows, pgx.RowTo[string])
		out = append(out, more...)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
