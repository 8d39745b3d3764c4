package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/plural"
)

// LocateDead returns, for each of ids, the DLQs holding a message with that
// id, in one query over dlq (a DLQ or its queue) or, when dlq is "", over
// every DLQ. Ids are per queue, so one id may be in several DLQs; an id in
// none is absent from the map.
func (s *Store) LocateDead(ctx context.Context, dlq string, ids []int64) (map[int64][]string, error) {
	for _, id := range ids {
		if id <= 0 {
			return nil, invalidf("locate dead messages: id %d is not valid; ids are positive", id)
		}
	}
	out := make(map[int64][]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := s.runDead(ctx, DeadFilter{Queue: dlq}, func(q *deadQuery) error {
		arg := q.arg(ids)
		sql := q.union("msg_id", func(string) string { return "msg_id = ANY(" + arg + "::bigint[])" }, "")
		rows, err := s.reads.Query(ctx, `SELECT dlq, msg_id FROM (`+sql+`) u ORDER BY dlq COLLATE "C"`, q.args...)
		if err != nil {
			return err
		}
		clear(out)
		var name string
		var id int64
		_, err = pgx.ForEachRow(rows, []any{&name, &id}, func() error {
			out[id] = append(out[id], name)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, wrapDead("locate "+plural.Count(len(ids), "dead message", "dead messages"), err)
	}
	return out, nil
}
