package ops_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An overview's QueueSet changes when a queue is created or dropped, a
// creation and a drop that leave the number of queues as it was included,
// and stays the same otherwise, whatever the overview lists.
func TestOverviewQueueSet(t *testing.T) {
	t.Parallel()
	// A database of its own: other tests create and drop queues.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)
	for _, q := range []string{"set_a", "set_b", "set_c"} {
		pgtest.CreateQueue(t, s, q)
	}
	set := func(req ops.OverviewRequest) string {
		t.Helper()
		o, err := svc.Overview(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if o.QueueSet == "" {
			t.Fatal("the overview has no queue set")
		}
		return o.QueueSet
	}
	before := set(ops.OverviewRequest{})
	if got := set(ops.OverviewRequest{MaxQueues: 1, QueueNameContains: "set_a"}); got != before {
		t.Fatalf("a bounded, filtered overview's queue set is %s; want every queue's, %s", got, before)
	}
	pgtest.DeadLetterN(t, s, "set_b", 2, pgtest.DeadSpec{Class: "X"})
	if got := set(ops.OverviewRequest{}); got != before {
		t.Fatalf("dead messages changed the queue set: %s, was %s", got, before)
	}
	pgtest.CreateQueue(t, s, "set_d")
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: "set_c", Confirm: true}); err != nil {
		t.Fatal(err)
	}
	after := set(ops.OverviewRequest{MaxQueues: 1})
	if after == before {
		t.Fatalf("a queue created and another dropped left the queue set as it was (%s)", after)
	}
	if got := set(ops.OverviewRequest{}); got != after {
		t.Fatalf("the queue set changed with nothing created or dropped: %s, was %s", got, after)
	}
}
