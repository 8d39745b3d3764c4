package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// QueuesWithoutTables returns, for each queue pgbus's settings list whose
// PGMQ work tables are gone, the reason health gives it
// (queue_tables_missing): what a restore of a dump that left PGMQ's
// tables out leaves (pg_dump leaves out the tables of PGMQ installed as
// an extension), or a drop outside pgbus. Each names the tables gone and
// the two steps that end it: the create that makes the queue again,
// empty, with the settings kept, or the drop that forgets it. It is one
// statement, for a migration to warn of them as health does.
func (s *Service) QueuesWithoutTables(ctx context.Context) (_ []HealthReason, err error) {
	ctx, end, err := s.enter(ctx, "QueuesWithoutTables", reads)
	if err != nil {
		return nil, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	gone, err := s.store.QueuesWithoutTables(ctx)
	if err != nil {
		return nil, err
	}
	var h Health
	for _, q := range gone {
		addTablesGone(&h, q)
	}
	return h.Reasons, nil
}

// checkTablesGone notes on h the queues pgbus's settings list whose work
// tables are gone, but for those another reason of h already names (a
// dropped queue's DLQ holding messages, workers waiting for a dropped
// queue), whose steps make them again too.
func (s *Service) checkTablesGone(ctx context.Context, h *Health) error {
	gone, err := s.store.QueuesWithoutTables(ctx)
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for _, r := range h.Reasons {
		if r.Code == "dlq_of_dropped_queue" || r.Code == "workers_of_dropped_queue" {
			named[r.Queue] = true
		}
	}
	for _, q := range gone {
		if !named[q.Queue] {
			addTablesGone(h, q)
		}
	}
	return nil
}

// addTablesGone adds to h the reason queue_tables_missing of q: of a
// queue whose DLQ alone is gone, with the create that makes the DLQ again
// as its one step, as the queue and its messages are there.
func addTablesGone(h *Health, q store.QueueTablesGone) {
	create := hint(OpQueueCreate, "makes it again, empty, with the settings pgbus kept of it", "queue", q.Queue)
	if q.Priorities > 0 {
		create = hint(OpQueueCreate, "makes it again, empty, with its priority levels and the settings pgbus kept of it", "queue", q.Queue, "priorities", q.Priorities)
	}
	if q.OnlyDLQ {
		create.Why = "makes its dead-letter queue again, empty; the queue, its messages and its settings stay as they are"
		h.add(HealthDegraded, "queue_tables_missing", q.Queue, fmt.Sprintf("queue %q is there, but its dead-letter queue's table is gone (%s): a drop outside pgbus; "+
			"messages that fail their last attempt cannot be dead-lettered, and stay in the queue to run again after their visibility timeout, "+
			"until the dead-letter queue is made again (workers whose role may create tables make it when they meet it)",
			q.Queue, strings.Join(q.Missing, ", ")),
			create)
		return
	}
	h.add(HealthDegraded, "queue_tables_missing", q.Queue, fmt.Sprintf("queue %q is in pgbus's settings, but %s gone (%s): a restore of a dump that left them out "+
		"(pg_dump leaves out the tables of PGMQ installed as an extension) or a drop outside pgbus; the messages it held are not in this database, "+
		"and sends to it and its workers fail until it is made again or dropped",
		q.Queue, plural.Of(len(q.Missing), "its table is", "its tables are"), strings.Join(q.Missing, ", ")),
		create,
		hint(OpQueueDrop, "forgets it instead: its settings, pause, failure history and counters", "queue", q.Queue, "confirm", true))
}
