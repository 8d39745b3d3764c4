package store

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/plural"
)

// LocateDead returns, for each of ids, the DLQs holding a message with that
// id, in one query over dlq (a DLQ or its queue) or, when dlq is "", over
// every DLQ, one query a chunk of them (deadChunk). Ids are per queue, so one id may be in several DLQs; an id in
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
		clear(out)
		// The chunks in the DLQs' order, byte by byte: each id's DLQs
		// come in that order.
		slices.Sort(q.dlqs)
		return inChunks(ctx, nil, q.dlqs, func(_ pgx.Tx, chunk []string) error {
			cq := q.chunk(chunk)
			arg := cq.arg(ids)
			sql := cq.union("msg_id", func(string) string { return "msg_id = ANY(" + arg + "::bigint[])" }, "")
			rows, err := s.reads.Query(ctx, `SELECT dlq, msg_id FROM (`+sql+`) u ORDER BY dlq COLLATE "C"`, cq.args...)
			if err != nil {
				return err
			}
			var name string
			var id int64
			_, err = pgx.ForEachRow(rows, []any{&name, &id}, func() error {
				out[id] = append(out[id], name)
				return nil
			})
			return err
		})
	})
	if err != nil {
		return nil, wrapDead("locate "+plural.Count(len(ids), "dead message", "dead messages"), err)
	}
	return out, nil
}
