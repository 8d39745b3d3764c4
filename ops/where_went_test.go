package ops_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A dead message asked for after another call took it (a second tab, a
// second click, a colleague) is not found, saying what the audit log
// records: retried by whom and when, into which queue as which message,
// or discarded, with the next step that finds it there.
func TestNotFoundSaysWhereTheMessageWent(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "charge"})

	retried, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || retried.Retried != 1 || len(retried.Moved) != 1 {
		t.Fatalf("retry: %+v, %v", retried, err)
	}
	newID := retried.Moved[0].MsgID
	_, err = svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0]})
	want := fmt.Sprintf("queue %q has no DLQ message %d: it was retried at ", q, ids[0])
	if ops.ErrorKind(err) != ops.KindNotFound || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), fmt.Sprintf("back into queue %s as message %d", q, newID)) || !strings.Contains(err.Error(), "(audit entry ") {
		t.Fatalf("show of the retried message: %v; want it not found, saying %q and where it went", err, want)
	}
	if steps := ops.NextSteps(err); len(steps) != 1 || steps[0].Op != ops.OpQueueMessages || steps[0].Args["queue"] != q {
		t.Errorf("show of the retried message: next %+v; want its queue's messages", steps)
	}
	again, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || again.NotFound != 1 || len(again.Outcomes) != 1 || !strings.Contains(again.Outcomes[0].Error, "it was retried at ") {
		t.Fatalf("a second retry of it: %+v, %v; want it not found, saying it was retried", again, err)
	}

	if d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids[1:2], Filter: ops.DeadFilter{Queue: q}}); err != nil || d.Discarded != 1 {
		t.Fatalf("discard: %+v, %v", d, err)
	}
	_, err = svc.DLQShow(ctx, ops.DLQShowRequest{MsgID: ids[1]})
	if ops.ErrorKind(err) != ops.KindNotFound || !strings.Contains(err.Error(), fmt.Sprintf("no DLQ holds message %d: it was discarded at ", ids[1])) ||
		!strings.Contains(err.Error(), "into the archive of "+q+"_dlq") {
		t.Fatalf("show of the discarded message without its queue: %v; want it not found, saying it was discarded", err)
	}
	if steps := ops.NextSteps(err); len(steps) != 1 || steps[0].Op != ops.OpDLQRestore || steps[0].Args["dry_run"] != true {
		t.Errorf("show of the discarded message: next %+v; want a restore's dry run", steps)
	}

	// An id no call moved keeps the words of what may have happened.
	_, err = svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[2] + 1000})
	if ops.ErrorKind(err) != ops.KindNotFound || !strings.Contains(err.Error(), "it may have been retried or discarded already") {
		t.Fatalf("show of an id never moved: %v", err)
	}
}

// A discard undone since (restored, then retried by a filter, whose entry
// lists no ids) or whose message was purged since is not where the
// message went: the lookup does not say a restore takes it back, which
// would not find it, but what may have happened.
func TestNotFoundAfterADiscardUndone(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "charge"})
	if d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Confirm: true}); err != nil || d.Discarded != 2 {
		t.Fatalf("discard: %+v, %v", d, err)
	}
	if r, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: ids[:1]}); err != nil || r.Restored != 1 {
		t.Fatalf("restore: %+v, %v", r, err)
	}
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10}); err != nil || r.Retried != 1 {
		t.Fatalf("retry by filter: %+v, %v", r, err)
	}
	if p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, Confirm: true}); err != nil || p.Purged != 1 {
		t.Fatalf("purge: %+v, %v", p, err)
	}
	for _, id := range ids {
		_, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id})
		if ops.ErrorKind(err) != ops.KindNotFound || strings.Contains(err.Error(), "discarded at") || !strings.Contains(err.Error(), "it may have been retried or discarded already") {
			t.Errorf("show of %d: %v; want it not found, without the discard undone since", id, err)
		}
		if steps := ops.NextSteps(err); slices.ContainsFunc(steps, func(h ops.Hint) bool { return h.Op == ops.OpDLQRestore }) {
			t.Errorf("show of %d: next %+v; want no restore, which would not find it", id, steps)
		}
	}
}
