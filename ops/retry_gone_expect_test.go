package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A dry run by filter that would move none of the messages it selects, as
// those of a queue that was dropped, hands out no expect token, and its
// first next step creates the queue again. A guarded call whose set was
// selected before the queue was dropped moves nothing and says the same:
// create the queue again, then the same call, which then moves the set.
func TestRetryDryRunIntoAGoneQueueGivesNoExpect(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its filters read every DLQ, which other tests drop
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "mail", Message: "smtp down"})
	req := ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 5, DryRun: true}
	before, err := svc.DLQRetry(ctx, req)
	if err != nil || before.Retried != 3 || before.Expect == "" {
		t.Fatalf("dry run while the queue is there: %+v, %v; want 3 to retry and an expect token", before, err)
	}
	pgtest.DropOutside(t, s, q)

	dry, err := svc.DLQRetry(ctx, req)
	if err != nil || dry.Retried != 0 || dry.Failed != 3 {
		t.Fatalf("dry run once the queue is gone: %+v, %v; want 3 failed, none to retry", dry, err)
	}
	if dry.Expect != "" {
		t.Errorf("a dry run that would move nothing hands out expect %q", dry.Expect)
	}
	for _, h := range dry.Next {
		if _, ok := h.Args["expect"]; ok {
			t.Errorf("a dry run that would move nothing gives a guarded call: %+v", h)
		}
	}
	if len(dry.Next) == 0 || dry.Next[0].Op != ops.OpQueueCreate || dry.Next[0].Args["queue"] != q {
		t.Errorf("dry run once the queue is gone: next %+v; want the queue created again first", dry.Next)
	}

	guarded := ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 5, Expect: before.Expect}
	_, err = svc.DLQRetry(ctx, guarded)
	steps := ops.NextSteps(err)
	if err == nil || !strings.Contains(err.Error(), "no longer exists") || !strings.Contains(err.Error(), "nothing was moved") {
		t.Fatalf("the guarded call once the queue is gone: %v; want it refused, saying the queue is gone and nothing moved", err)
	}
	if len(steps) < 2 || steps[0].Op != ops.OpQueueCreate || steps[0].Args["queue"] != q ||
		steps[1].Op != ops.OpDLQRetry || steps[1].Args["expect"] != before.Expect || steps[1].Args["dry_run"] != nil {
		t.Fatalf("the guarded call once the queue is gone: next %+v; want the queue created again, then the same call", steps)
	}
	if n := pgtest.Live(t, s, store.DLQName(q)); n != 3 {
		t.Fatalf("the DLQ holds %d; want the 3, none moved", n)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q}); err != nil {
		t.Fatalf("the create the refusal names: %v", err)
	}
	if r, err := svc.DLQRetry(ctx, guarded); err != nil || r.Retried != 3 {
		t.Fatalf("the same guarded call once the queue is back: %+v, %v; want the 3 retried", r, err)
	}
}

// A dry run by filter of which only a part would move, the rest being in
// the DLQ of a queue that was dropped, gives its expect token with the
// create of that queue before the guarded call, which moves the whole set
// or nothing: followed in order, the steps move it all.
func TestRetryDryRunPartlyIntoAGoneQueueCreatesItFirst(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its filters read every DLQ, which other tests drop
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	kind := uniqueName("kind")
	kept, gone := newQueue(t, s, nil), newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, kept, 2, pgtest.DeadSpec{Kind: kind})
	pgtest.DeadLetterN(t, s, gone, 1, pgtest.DeadSpec{Kind: kind})
	pgtest.DropOutside(t, s, gone)
	f := ops.DeadFilter{Kind: kind}
	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: 5, DryRun: true})
	if err != nil || dry.Retried != 2 || dry.Failed != 1 || dry.Expect == "" {
		t.Fatalf("dry run: %+v, %v; want 2 to retry, 1 failed, and an expect token", dry, err)
	}
	create, guarded := -1, -1
	for i, h := range dry.Next {
		switch {
		case h.Op == ops.OpQueueCreate && h.Args["queue"] == gone:
			create = i
		case h.Op == ops.OpDLQRetry && h.Args["expect"] == dry.Expect:
			guarded = i
		}
	}
	if create < 0 || guarded < 0 || create > guarded {
		t.Fatalf("dry run: next %+v; want queue %s created again before the guarded call", dry.Next, gone)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: gone}); err != nil {
		t.Fatalf("the create the dry run names: %v", err)
	}
	h := dry.Next[guarded]
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Kind: h.Args["kind"].(string)}, Limit: h.Args["limit"].(int), Expect: h.Args["expect"].(string)})
	if err != nil || r.Retried != 3 {
		t.Fatalf("the guarded call, once the queue is back: %+v, %v; want the 3 retried", r, err)
	}
}

// A retry by a group's key that leaves messages dead (their queue is
// gone) points at what is still dead with the same filter: followed, the
// list shows the group's messages, not every dead message of every DLQ.
func TestRetryByGroupListsWhatIsStillDeadOfTheGroup(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its filters read every DLQ, which other tests drop
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	want := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Class: "smtp.Down", Message: "smtp down"})
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "bad.Input", Message: "no address"})
	pgtest.DropOutside(t, s, q)
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, ErrorClass: "smtp.Down"}})
	if err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary of the class: %+v, %v; want its one group", sum, err)
	}
	group := sum.Groups[0].Group
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Group: group}, Limit: 10})
	if err != nil || r.Failed != 3 {
		t.Fatalf("retry of the group: %+v, %v; want its 3 failed", r, err)
	}
	var still ops.Hint
	for _, h := range r.Next {
		if h.Op == ops.OpDLQList && strings.Contains(h.Why, "still dead") {
			still = h
		}
	}
	if still.Args["group"] != group {
		t.Fatalf("retry of the group: next %+v; want what is still dead listed with the group %s", r.Next, group)
	}
	f, limit := hintFilter(t, still)
	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	for _, it := range page.Items {
		if it.DLQ != store.DLQName(q) {
			t.Errorf("the list of what is still dead shows message %d of %s", it.MsgID, it.DLQ)
		}
		got[it.MsgID] = true
	}
	if len(page.Items) != len(want) {
		t.Errorf("the list of what is still dead shows %d messages; want the group's %d", len(page.Items), len(want))
	}
	for _, id := range want {
		if !got[id] {
			t.Errorf("the list of what is still dead leaves out message %d of the group", id)
		}
	}
}
