package ops_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A PGMQ queue another client made under a name that ends in _dlq is taken
// for the DLQ of the queue its name starts with, whether that queue exists
// or not: pgbus records no list of the DLQs it made, and gives every table
// so named its DLQ's indexes and triggers, so that it cannot tell one from
// the other. Its messages are listed as dead (reason not_recorded), it is
// no queue of its own, and, its queue missing, health names it the DLQ of
// a dropped queue. README's "With PGMQ, in either order" says so; this
// test keeps that true.
func TestAQueueNamedLikeADLQIsTakenForOne(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, pgtest.PGMQScript(t)); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	if err := pgtest.RunSQL(t, url, `SELECT pgmq.create('audit_dlq'); SELECT pgmq.send('audit_dlq', '{"n": 1}'::jsonb)`); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Migrate(ctx); err != nil || len(st.DLQsRepaired) != 1 || st.DLQsRepaired[0] != "audit_dlq" {
		t.Fatalf("migrate = %+v, %v; want audit_dlq given a DLQ's indexes and triggers", st, err)
	}
	svc := newService(t, s, ops.Options{})
	list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: "audit"}})
	if err != nil || len(list.Items) != 1 || list.Items[0].Reason != "not_recorded" {
		t.Fatalf("dead messages of audit = %+v, %v; want the other client's one message, reason not_recorded", list, err)
	}
	stats, err := svc.QueueStats(ctx, ops.QueueStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats.Queues {
		if q.Queue == "audit_dlq" {
			t.Fatalf("queue stats list audit_dlq as a queue: %+v", q)
		}
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := reasonOf(h, "dlq_of_dropped_queue", "audit"); r == nil || r.Status != ops.HealthDegraded {
		t.Fatalf("health = %+v; want DEGRADED dlq_of_dropped_queue on audit", h)
	}
}
