package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A call on the dead messages given a priority level's name (orders_p1)
// instead of its queue's is refused as invalid, as list and summary are,
// and its first next step is the same call on the queue, whose DLQ holds
// the dead messages of every level: taken as given, it finds the message.
// The step was the list of queues, which an agent following steps could
// not turn into the call it meant.
func TestCallsOnALevelNameGiveTheCallOnItsQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	pq := newLevelledQueue(t, s, svc)
	id := rawDead(t, s, pq, `{"pgbus_kind":"report"}`)
	level := store.PriorityQueueName(pq, 1)
	calls := map[string]func() error{
		ops.OpDLQShow: func() error {
			_, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: level, MsgID: id})
			return err
		},
		ops.OpDLQRetry: func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: level}, IDs: []int64{id}, DryRun: true})
			return err
		},
		ops.OpDLQDiscard: func() error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: level}, IDs: []int64{id}, DryRun: true})
			return err
		},
		ops.OpDLQRetry + " by filter": func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: level}, Limit: 5, DryRun: true})
			return err
		},
		ops.OpDLQDiscard + " by filter": func() error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: level}, Limit: 5, DryRun: true})
			return err
		},
		ops.OpDLQDiscarded: func() error {
			_, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: level}})
			return err
		},
		ops.OpDLQRestore: func() error {
			_, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: level, IDs: []int64{id}, DryRun: true})
			return err
		},
	}
	for name, call := range calls {
		op, _, _ := strings.Cut(name, " ")
		err := call()
		hints := ops.HintsOf(err)
		if !errors.Is(err, ops.ErrInvalid) || len(hints) == 0 || hints[0].Op != op || hints[0].Args["queue"] != pq {
			t.Errorf("%s on level %s: %v, next %+v; want it refused as invalid, the same call on queue %s first", op, level, err, hints, pq)
		}
	}
	// The show's step, taken as given, shows the message.
	_, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: level, MsgID: id})
	step := ops.HintsOf(err)[0]
	queue, _ := step.Args["queue"].(string)
	msgID, _ := step.Args["msg_id"].(int64)
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: queue, MsgID: msgID})
	if err != nil || m.MsgID != id {
		t.Errorf("the show's step %+v: %+v, %v; want message %d", step, m, err, id)
	}
}
