package ops_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A dead message whose queue was dropped (outside pgbus, its DLQ left
// behind) is shown saying so, its next steps leading with the create that
// health's reason for that queue offers, priority levels included, then
// the retry, then the discard: the retry it led with failed, saying to
// create the queue again. Followed in order, the steps retry it.
func TestShowOfADeadMessageOfADroppedQueue(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	if err := s.CreateQueue(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}
	plain := pgtest.DeadLetterN(t, s, "legacy", 3, pgtest.DeadSpec{Kind: "mail", Message: "smtp down"})
	if err := s.CreatePriorityQueue(ctx, "tiered", 2); err != nil {
		t.Fatal(err)
	}
	sent, err := s.SendBatch(ctx, "tiered_p1", []store.NewMessage{{Payload: json.RawMessage(`1`)}})
	if err != nil {
		t.Fatal(err)
	}
	tiered, err := s.DeadLetterMany(ctx, "tiered_p1", store.DLQName("tiered"), store.SourceWorker, []store.DeadLetterItem{{MsgID: sent[0],
		Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E"}}})
	if err != nil || len(tiered) != 1 {
		t.Fatalf("dead-letter into tiered: %v, %v", tiered, err)
	}
	pgtest.DropOutside(t, s, "legacy", "tiered_p0", "tiered_p1")
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	healthCreate := func(queue string) ops.Hint {
		for _, r := range h.Reasons {
			if r.Code == "dlq_of_dropped_queue" && r.Queue == queue {
				return findHint(t, r.Next, ops.OpQueueCreate)
			}
		}
		t.Fatalf("health names no dropped queue %s: %+v", queue, h.Reasons)
		return ops.Hint{}
	}
	for _, c := range []struct {
		queue  string
		id     int64
		levels int
	}{{"legacy", plain[0], 0}, {"tiered", tiered[0].DLQMsgID, 2}} {
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: store.DLQName(c.queue), MsgID: c.id})
		if err != nil {
			t.Fatalf("show %d of %s: %v", c.id, c.queue, err)
		}
		if !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, fmt.Sprintf("queue %q was dropped", c.queue)) }) {
			t.Errorf("show %d of %s: notes %q; want one saying the queue was dropped", c.id, c.queue, m.Notes)
		}
		create := healthCreate(c.queue)
		if levels, ok := create.Args["priorities"]; ok != (c.levels > 0) || ok && fmt.Sprint(levels) != fmt.Sprint(c.levels) {
			t.Fatalf("health's create for %s: %+v; want %d priority levels", c.queue, create, c.levels)
		}
		if len(m.Next) != 3 || !reflect.DeepEqual(m.Next[0], create) ||
			m.Next[1].Op != ops.OpDLQRetry || fmt.Sprint(m.Next[1].Args["ids"]) != fmt.Sprint([]int64{c.id}) || m.Next[2].Op != ops.OpDLQDiscard {
			t.Errorf("show %d of %s: next %+v; want health's create %+v, then the retry, then the discard", c.id, c.queue, m.Next, create)
		}
	}
	// Followed: the create, then the retry, which now moves it.
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: store.DLQName("legacy"), MsgID: plain[0]})
	if err != nil || len(m.Next) < 2 {
		t.Fatalf("show: %+v, %v", m, err)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: fmt.Sprint(m.Next[0].Args["queue"])}); err != nil {
		t.Fatalf("the create the show leads with: %v", err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: m.Next[1].Args["ids"].([]int64), Filter: ops.DeadFilter{Queue: fmt.Sprint(m.Next[1].Args["queue"])}})
	if err != nil || r.Retried != 1 {
		t.Fatalf("the retry the show gives next: %+v, %v; want it retried", r, err)
	}
	// The queue back, another of its messages is shown as any other.
	m, err = svc.DLQShow(ctx, ops.DLQShowRequest{Queue: store.DLQName("legacy"), MsgID: plain[1]})
	if err != nil || len(m.Next) == 0 || m.Next[0].Op != ops.OpDLQRetry || slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, "dropped") }) {
		t.Fatalf("show once the queue is back: notes %q, next %+v, %v; want no note of a drop and the retry first", m.Notes, m.Next, err)
	}
}
