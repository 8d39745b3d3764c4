package tools_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A DLQ's name given where a queue's is taken points at its dead messages
// only when that DLQ exists, through a summary that runs; a name that
// only looks like one points at the queues there are.
func TestDLQNameGivenAsQueueHintsWhatExists(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "k", Message: "boom"})

	m := e.metaOf(t, "pgbus_queue_messages", map[string]any{"queue": q + "_dlq"})
	var sum *nextCall
	for i, n := range m.Next {
		if n.Tool == "pgbus_dlq_summary" {
			sum = &m.Next[i]
		}
	}
	if sum == nil {
		t.Fatalf("messages of %s_dlq: next %+v, want its summary", q, m.Next)
	}
	if got := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", sum.Arguments); got.Total != 2 {
		t.Errorf("the hinted summary %v counts %d, want 2", sum.Arguments, got.Total)
	}

	none := uniqueName("nosuch")
	m = e.metaOf(t, "pgbus_queue_messages", map[string]any{"queue": none + "_dlq"})
	if len(m.Next) == 0 {
		t.Errorf("messages of %s_dlq, which does not exist: next %+v, want a next step", none, m.Next)
	}
	for _, n := range m.Next {
		if n.Tool == "pgbus_dlq_summary" {
			t.Errorf("messages of %s_dlq, which does not exist: next %+v suggests its summary", none, n)
		}
		if n.Tool == "pgbus_queue_stats" && len(n.Arguments) != 0 {
			t.Errorf("messages of %s_dlq: next %+v, want the stats of every queue", none, n)
		}
	}
	if !hasCall(m.Next, "pgbus_queue_stats", map[string]any{}) {
		t.Errorf("messages of %s_dlq, which does not exist: next %+v, want the queues there are", none, m.Next)
	}
}
