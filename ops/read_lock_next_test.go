package ops_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A read of a queue or DLQ whose table another session holds locked gives
// up after its wait for the lock, saying to try it again once that
// session ends; its next step is that: the same call, with its own
// arguments, switches such as include_payload too. It had none, though
// its text said to try again. The health
// check is not among them, which may read no table held and say OK.
func TestReadOfALockedQueueGivesTheSameCallAgain(t *testing.T) {
	t.Parallel()
	url, s, q, ids := lockableDeadQueue(t, 1)
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: longCallTimeout, ReadLockWait: 500 * time.Millisecond})
	ctx := testContext(t)
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q)
	dlqLock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q+"_dlq")

	reads := []struct {
		name string
		read func() error
		op   string
		args map[string]any
	}{
		{"the stats of the queue", func() error {
			_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
			return err
		}, ops.OpQueueStats, map[string]any{"queue": q}},
		{"the stats of every queue", func() error {
			_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{})
			return err
		}, ops.OpQueueStats, nil},
		{"the queue's messages", func() error {
			_, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, State: "waiting", Limit: 7, IncludePayload: true, FullHistory: true})
			return err
		}, ops.OpQueueMessages, map[string]any{"queue": q, "state": "waiting", "limit": 7, "include_payload": true, "full_history": true}},
		{"the DLQ's list", func() error {
			_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q, Kind: "k"}, Limit: 5})
			return err
		}, ops.OpDLQList, map[string]any{"queue": q, "kind": "k", "limit": 5}},
		{"the DLQ's summary", func() error {
			_, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
			return err
		}, ops.OpDLQSummary, map[string]any{"queue": q}},
		{"a dead message", func() error {
			_, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true, FullHistory: true})
			return err
		}, ops.OpDLQShow, map[string]any{"queue": q, "msg_id": ids[0], "include_payload": true, "full_history": true}},
	}
	for _, r := range reads {
		err := r.read()
		if k := ops.ErrorKind(err); k != ops.KindUnavailable {
			t.Fatalf("%s while pid %d holds the queue's table: kind %s, %v; want unavailable", r.name, lock.PID, k, err)
		}
		next := ops.NextSteps(err)
		if len(next) != 1 || next[0].Op != r.op || fmt.Sprint(next[0].Args) != fmt.Sprint(r.args) || next[0].Why == "" {
			t.Errorf("%s while the queue's table is held: next steps %+v; want the same call again, %s %v", r.name, next, r.op, r.args)
		}
	}

	lock.Release()
	dlqLock.Release()
	if _, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, State: "waiting", Limit: 7}); err != nil {
		t.Fatalf("the queue's messages once the lock went: %v", err)
	}
}
