package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A group's key given with a queue whose DLQ does not hold that group, as
// when a key is copied from another queue's summary, is refused by every
// call that filters by it, naming the queue that holds it, where it
// selected nothing and said nothing; with the right queue it selects the
// group, and a key found nowhere (a group emptied meanwhile) selects
// nothing without an error. Nothing moves.
func TestGroupGivenWithAnotherQueue(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	holder, other := newQueue(t, s, nil), newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, holder, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "gateway timed out"})
	pgtest.DeadLetter(t, s, other, pgtest.DeadSpec{Kind: "email", Class: "Bounce", Message: "mailbox full"})
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: holder}})
	if err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary of %s: %+v, %v", holder, sum, err)
	}
	key := sum.Groups[0].Group
	wrong := ops.DeadFilter{Queue: other, Group: key}
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "is a group of "+holder+"_dlq, not of "+other+"_dlq") ||
			!hasHint(ops.HintsOf(err), ops.OpDLQList, map[string]any{"queue": holder, "group": key}) {
			t.Fatalf("%s with the group of %s and queue %s: %v, hints %+v; want a refusal naming %s", what, holder, other, err, ops.HintsOf(err), holder)
		}
	}
	_, err = svc.DLQList(ctx, ops.DLQListRequest{Filter: wrong, Limit: 10})
	want("list", err)
	_, err = svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: wrong})
	want("summary", err)
	_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: wrong, DryRun: true})
	want("retry dry run", err)
	_, err = svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: wrong, Confirm: true})
	want("discard", err)
	if !inDLQ(t, s, holder, ids[0]) {
		t.Fatal("the group's message left its DLQ")
	}

	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: holder + "_dlq", Group: key}, Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].MsgID != ids[0] {
		t.Fatalf("list with the group's own queue: %+v, %v; want its message", page, err)
	}
	gone := ops.DeadFilter{Queue: other, Group: "00000000-0000-0000-0000-000000000000"}
	if page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: gone, Limit: 10}); err != nil || len(page.Items) != 0 {
		t.Fatalf("list of a group found nowhere: %+v, %v; want an empty page", page, err)
	}
}

// Whether a group's key given with a queue is held by that queue's DLQ,
// or by others, is read from the group counts: no other DLQ's table is
// read, where every DLQ was summarized to learn it. The refusal and the
// read by the right queue are as before.
func TestGroupScopeReadsNoOtherDLQ(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	holder, other, third := newQueue(t, owner, nil), newQueue(t, owner, nil), newQueue(t, owner, nil)
	ids := pgtest.DeadLetter(t, owner, holder, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "gateway timed out"})
	pgtest.DeadLetter(t, owner, other, pgtest.DeadSpec{Kind: "email", Class: "Bounce", Message: "mailbox full"})
	pgtest.DeadLetter(t, owner, third, pgtest.DeadSpec{Kind: "sms", Class: "Refused", Message: "no route"})
	sum, err := newService(t, owner, ops.Options{}).DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: holder}})
	if err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary of %s: %+v, %v", holder, sum, err)
	}
	key := sum.Groups[0].Group
	s, reads := pgtest.CountingStore(t, url, `"q_`+third+`_dlq"`)
	svc := newService(t, s, ops.Options{})
	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: holder, Group: key}, Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].MsgID != ids[0] {
		t.Fatalf("list of the group with its own queue: %+v, %v; want its message", page, err)
	}
	_, err = svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: other, Group: key}, Limit: 10})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "is a group of "+holder+"_dlq, not of "+other+"_dlq") {
		t.Fatalf("list of the group with queue %s: %v; want it refused, naming %s", other, err, holder)
	}
	gone := "00000000-0000-0000-0000-000000000000"
	if page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: other, Group: gone}, Limit: 10}); err != nil || len(page.Items) != 0 {
		t.Fatalf("list of a group found nowhere: %+v, %v; want an empty page", page, err)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("%d statements read the DLQ of %s, which holds none of the groups asked about; want none", n, third)
	}
}
