package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A dead message whose queue is gone (dropped outside pgbus, its DLQ left
// behind) cannot be retried: by id, by filter and in a dry run, it is a
// failure that says to create the queue again, with that as a next step,
// not a message another call took, and it stays in its DLQ.
func TestRetryIntoAQueueThatIsGone(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	pgtest.Exec(t, pgtest.URL(t), `DROP TABLE pgmq."q_`+q+`", pgmq."a_`+q+`"; DELETE FROM pgmq.meta WHERE queue_name = '`+q+`'`)
	svc := newService(t, s, ops.Options{})
	for _, req := range []ops.DLQRetryRequest{
		{IDs: ids, Filter: ops.DeadFilter{Queue: q}},
		{IDs: ids, Filter: ops.DeadFilter{Queue: q}, DryRun: true},
		{Filter: ops.DeadFilter{Queue: q}, Limit: 10},
		{Filter: ops.DeadFilter{Queue: q}, Limit: 10, DryRun: true},
	} {
		r, err := svc.DLQRetry(ctx, req)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		if r.Retried != 0 || r.AlreadyMoved != 0 || r.Failed != 1 || !strings.Contains(r.FirstError, "create the queue again") {
			t.Errorf("retry %+v into a queue that is gone: retried %d, already moved %d, failed %d, first error %q; want one failure saying to create the queue",
				req, r.Retried, r.AlreadyMoved, r.Failed, r.FirstError)
		}
		for _, o := range r.Outcomes {
			if o.Outcome != ops.OutcomeFailed {
				t.Errorf("retry %+v: outcome of %d is %s, want failed", req, o.ID, o.Outcome)
			}
		}
		// The step that mends it comes with the list of what is dead.
		if !hasHint(r.Next, ops.OpQueueCreate, map[string]any{"queue": q}) {
			t.Errorf("retry %+v: next %+v; want the queue created again", req, r.Next)
		}
	}
	if n := pgtest.Live(t, s, store.DLQName(q)); n != 1 {
		t.Fatalf("%d messages left in the DLQ, want the one that could not move", n)
	}
}

// A row another client wrote into the DLQ of a queue with priority levels
// names no level: a retry by id, dry or not, sends it to level 0, where a
// send without a priority goes.
func TestRetryRowWithoutBlockIntoQueueWithPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newLevelledQueue(t, s, svc)
	id := rawDead(t, s, q, `{"job_class":"RubyJob"}`)
	p0 := store.PriorityQueueName(q, 0)
	for _, dry := range []bool{true, false} {
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: q}, DryRun: dry})
		if err != nil || r.Retried != 1 || r.Failed != 0 || len(r.Outcomes) != 1 || r.Outcomes[0].Queue != p0 {
			t.Fatalf("retry (dry run %v) = %+v, %v; want it retried into %s", dry, r, err, p0)
		}
	}
	if n := pgtest.Live(t, s, p0); n != 1 {
		t.Fatalf("level 0 holds %d messages, want the retried one", n)
	}
}

// A retry into the levels of a queue with priority levels, which no worker
// serves, names the queue in its workers and its next steps, the queue
// being what a worker is started for, where it named each level: a worker
// of a level alone is refused, and a level's list shows that level only.
func TestRetryIntoLevelsNamesTheQueueToWork(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{Handlers: map[string]string{}}) // the command line's: its next steps start workers
	q := newLevelledQueue(t, s, svc)
	for _, p := range []int{1, 2} {
		level := store.PriorityQueueName(q, p)
		ids, err := s.SendBatch(ctx, level, []store.NewMessage{{Payload: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		items := []store.DeadLetterItem{{MsgID: ids[0], Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E"}}}
		if _, err := s.DeadLetterMany(ctx, level, store.DLQName(q), store.SourceWorker, items); err != nil {
			t.Fatal(err)
		}
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10})
	if err != nil || r.Retried != 2 {
		t.Fatalf("retry = %+v, %v; want 2 retried", r, err)
	}
	if len(r.Workers) != 1 || r.Workers[0].Queue != q || r.Workers[0].Served() {
		t.Fatalf("workers = %+v; want queue %s once, unserved", r.Workers, q)
	}
	for _, h := range r.Next {
		if h.Op == ops.OpWork && h.Args["queue"] != q {
			t.Errorf("next step %+v: a worker is started for queue %s, not a level", h, q)
		}
	}
	if !hasHint(r.Next, ops.OpWork, map[string]any{"queue": q}) {
		t.Errorf("next = %+v; want the start of a worker for %s", r.Next, q)
	}
	// The list to watch them run in is the queue's, every level of it.
	if !hasHint(r.Next, ops.OpQueueMessages, map[string]any{"queue": q}) {
		t.Errorf("next = %+v; want the messages of %s, not of one level", r.Next, q)
	}
}

// The stats of a priority level are refused, naming the queue's, where
// they answered with the queue's dead messages and none of the last
// hour's counts, which are kept per queue; a send to a level's name is
// refused too, naming the queue and priority to send with.
func TestLevelNameRefusedWhereTheQueueIsMeant(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newLevelledQueue(t, s, svc)
	level := store.PriorityQueueName(q, 1)
	_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: level})
	if ops.ErrorKind(err) != ops.KindInvalid || !strings.Contains(err.Error(), "priority level 1 of queue "+q) || !hasHint(ops.NextSteps(err), ops.OpQueueStats, map[string]any{"queue": q}) {
		t.Fatalf("stats of level %s: %v, next %+v; want it refused, naming the stats of %s", level, err, ops.NextSteps(err), q)
	}
	if r, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); err != nil || len(r.Queues) != 1 {
		t.Fatalf("stats of the queue: %+v, %v", r, err)
	}
	_, err = svc.Send(ctx, ops.SendRequest{Queue: level, Payload: json.RawMessage(`1`)})
	if ops.ErrorKind(err) != ops.KindInvalid || !strings.Contains(err.Error(), fmt.Sprintf("send to %s with priority 1", q)) {
		t.Fatalf("send to level %s: %v; want it refused, naming the queue and priority", level, err)
	}
	if n := pgtest.Live(t, s, level); n != 0 {
		t.Fatalf("level %s holds %d messages after the refused send", level, n)
	}
}

// newLevelledQueue creates a queue with three priority levels through svc,
// dropped when the test ends.
func newLevelledQueue(t *testing.T, s *store.Store, svc *ops.Service) string {
	t.Helper()
	q := uniqueName("opq")
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
	if _, err := svc.QueueCreate(testContext(t), ops.QueueCreateRequest{Queue: q, Priorities: 3}); err != nil {
		t.Fatal(err)
	}
	return q
}

// A queue with priority levels whose tables were dropped outside pgbus is
// named with its levels in the step that creates it again: without them
// the create was refused, saying to drop it first, which deletes the DLQ
// the retry meant to save. The refusal says how to create it.
func TestRetryIntoAGoneQueueWithPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newLevelledQueue(t, s, svc)
	ids, err := s.SendBatch(ctx, store.PriorityQueueName(q, 1), []store.NewMessage{{Payload: json.RawMessage(`1`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeadLetterMany(ctx, store.PriorityQueueName(q, 1), store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: ids[0],
		Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E"}}}); err != nil {
		t.Fatal(err)
	}
	pgtest.DropOutside(t, s, store.PriorityQueueName(q, 0), store.PriorityQueueName(q, 1), store.PriorityQueueName(q, 2))
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10})
	if err != nil || r.Failed != 1 || !hasHint(r.Next, ops.OpQueueCreate, map[string]any{"queue": q, "priorities": 3}) {
		t.Fatalf("retry into the gone queue: %+v, %v; want a failure and the queue created again with its 3 levels", r, err)
	}
	_, err = svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q})
	if err == nil || !strings.Contains(err.Error(), "create it with 3 priority levels") || !strings.Contains(err.Error(), "deletes its messages and its DLQ's") {
		t.Fatalf("create without its levels: %v; want it refused, saying to create it with 3 levels and what a drop deletes", err)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 3}); err != nil {
		t.Fatalf("the create the retry names: %v", err)
	}
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10}); err != nil || r.Retried != 1 {
		t.Fatalf("retry once the queue is back: %+v, %v", r, err)
	}
	if n := pgtest.Live(t, s, store.PriorityQueueName(q, 1)); n != 1 {
		t.Fatalf("level 1 holds %d messages, want the retried one", n)
	}
}

// A queue whose table, or archive, was dropped or renamed by hand is made
// again by a create: PGMQ's register (pgmq.meta) still named it, so the
// create said it existed and made nothing, and every send failed.
func TestCreateRemakesATableDroppedByHand(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, drop := range []string{`DROP TABLE pgmq."q_%s"`, `ALTER TABLE pgmq."a_%s" RENAME TO "a_%[1]s_old"`, `DROP TABLE pgmq."q_%s_dlq"`} {
		q := newQueue(t, s, nil)
		pgtest.Exec(t, pgtest.URL(t), fmt.Sprintf(drop, q))
		c, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q})
		if err != nil || !c.Created {
			t.Errorf("%s, then create: %+v, %v; want it created again", drop, c, err)
			continue
		}
		if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`1`)}); err != nil {
			t.Errorf("%s, then create: send: %v", drop, err)
		}
		for _, name := range []string{q, store.DLQName(q)} {
			if ok, err := s.QueueTablesExist(ctx, name); err != nil || !ok {
				t.Errorf("%s, then create: tables of %s there: %v, %v", drop, name, ok, err)
			}
		}
	}
}

// A drop, purge, pause or resume of a priority level is refused saying a
// level is not one alone and the queue is, with the step that fits: what
// the queue holds before a drop or purge (whose own step would delete it
// all), the same pause or resume of the queue. A drop or purge said the
// level's stats were asked for, and a pause to send with a priority.
func TestQueueOpsOfALevelNameTheQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newLevelledQueue(t, s, svc)
	level := store.PriorityQueueName(q, 1)
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`), Priority: 1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		verb, op string
		call     func() error
	}{
		{"dropped", ops.OpQueueStats, func() error {
			_, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: level, Confirm: true})
			return err
		}},
		{"purged", ops.OpQueueStats, func() error {
			_, err := svc.QueuePurge(ctx, ops.QueuePurgeRequest{Queue: level, Confirm: true})
			return err
		}},
		{"paused", ops.OpQueuePause, func() error { _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: level}); return err }},
		{"resumed", ops.OpQueueResume, func() error { _, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: level}); return err }},
	} {
		err := c.call()
		want := "a level is not " + c.verb + " alone; queue " + q + " is, every level at once"
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), want) || !hasHint(ops.NextSteps(err), c.op, map[string]any{"queue": q}) {
			t.Errorf("%s of level %s: %v (next %v); want %q and a step of %s on %s", c.verb, level, err, ops.NextSteps(err), want, c.op, q)
		}
	}
	if n := pgtest.Live(t, s, level); n != 1 {
		t.Fatalf("level %s holds %d messages after the refusals, want its 1", level, n)
	}
}

// The guarded flow over a set a filter selects from two DLQs, one of whose
// queues is gone: the dry run's first next step is the queue created
// again, before the real call with its expect, which says it needs that
// queue first; followed in that order, the steps move both messages.
func TestGuardedRetryOverAQueueThatIsGone(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its filter reads every DLQ, which other tests drop
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	gone, kept := newQueue(t, s, nil), newQueue(t, s, nil)
	kind := uniqueName("charge")
	pgtest.DeadLetter(t, s, gone, pgtest.DeadSpec{Kind: kind, Message: "boom"})
	pgtest.DeadLetter(t, s, kept, pgtest.DeadSpec{Kind: kind, Message: "boom"})
	pgtest.DropOutside(t, s, gone)
	f := ops.DeadFilter{Kind: kind}

	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: 10, DryRun: true})
	if err != nil || dry.Retried != 1 || dry.Failed != 1 || dry.Expect == "" {
		t.Fatalf("dry run = %+v, %v; want 1 to move, 1 left for its queue, and an expect", dry, err)
	}
	create, real := -1, -1
	for i, h := range dry.Next {
		switch {
		case h.Op == ops.OpQueueCreate && h.Args["queue"] == gone && create < 0:
			create = i
		case h.Op == ops.OpDLQRetry && h.Args["expect"] == dry.Expect:
			real = i
		}
	}
	if create < 0 || real < 0 || create > real || !strings.Contains(dry.Next[real].Why, gone) {
		t.Fatalf("next = %+v; want queue %s created again first, then the real call with the expect, saying it needs %s", dry.Next, gone, gone)
	}
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: 10, Expect: dry.Expect}); err == nil || pgtest.Live(t, s, store.DLQName(kept)) != 1 {
		t.Fatalf("guarded retry before queue %s is created again = %+v, %v; want it refused, nothing moved", gone, r, err)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: gone}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: 10, Expect: dry.Expect})
	if err != nil || r.Retried != 2 || r.Failed != 0 {
		t.Fatalf("guarded retry with the expect, queue %s created again = %+v, %v; want both moved", gone, r, err)
	}
	for _, q := range []string{gone, kept} {
		if n := pgtest.Live(t, s, q); n != 1 {
			t.Errorf("%s holds %d messages; want its retried one", q, n)
		}
	}
}
