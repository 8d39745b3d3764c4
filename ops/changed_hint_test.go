package ops_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// exactHint reports whether hints hold a step of op with exactly these
// arguments, none more.
func exactHint(hints []ops.Hint, op string, args map[string]any) bool {
	for _, h := range hints {
		if h.Op == op && len(h.Args) == len(args) && hasHint([]ops.Hint{h}, op, args) {
			return true
		}
	}
	return false
}

// A guarded retry or discard refused because its selection changed names
// as its next step the dry run of the same call: every argument that
// shapes it (deadline clearing, pace, limit, filter) kept, the expect
// dropped. So does a call whose expect cannot be read, and the call that
// lost a race for the same set. Followed, the step gives the expect that
// moves the set.
func TestChangedSelectionRedoKeepsTheCallsArguments(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Class: "Timeout"})
	f := ops.DeadFilter{Queue: q + "_dlq", ErrorClass: "Timeout"}
	want := map[string]any{"queue": q + "_dlq", "error_class": "Timeout", "limit": 2, "dry_run": true, "clear_deadline": true, "rate": 2}

	retry := ops.DLQRetryRequest{Filter: f, Limit: 1, DryRun: true, ClearDeadline: true, Rate: 2}
	dry, err := svc.DLQRetry(ctx, retry)
	if err != nil || dry.Expect == "" {
		t.Fatalf("dry run = %+v, %v; want an expect", dry, err)
	}
	retry.DryRun, retry.Limit, retry.Expect = false, 2, dry.Expect
	_, err = svc.DLQRetry(ctx, retry)
	if !errors.Is(err, ops.ErrChanged) || !exactHint(ops.HintsOf(err), ops.OpDLQRetry, want) {
		t.Fatalf("retry of 2 with the expect of 1 = %v (hints %+v); want ErrChanged and the dry run of the same call %v", err, ops.HintsOf(err), want)
	}
	retry.Expect = "not-a-token"
	if _, err = svc.DLQRetry(ctx, retry); !errors.Is(err, ops.ErrInvalid) || !exactHint(ops.HintsOf(err), ops.OpDLQRetry, want) {
		t.Fatalf("retry with an unreadable expect = %v (hints %+v); want the dry run of the same call %v", err, ops.HintsOf(err), want)
	}

	// The step, followed, gives the expect that moves the set; the call
	// that lost the race for it is refused with the same step.
	again := ops.DLQRetryRequest{Filter: f, Limit: 2, DryRun: true, ClearDeadline: true, Rate: 2}
	dry, err = svc.DLQRetry(ctx, again)
	if err != nil || dry.Expect == "" || dry.Retried != 2 {
		t.Fatalf("the dry run named = %+v, %v; want 2 and an expect", dry, err)
	}
	again.DryRun, again.Expect = false, dry.Expect
	if r, err := svc.DLQRetry(ctx, again); err != nil || r.Retried != 2 {
		t.Fatalf("the first guarded retry = %+v, %v; want 2 retried", r, err)
	}
	_, err = svc.DLQRetry(ctx, again)
	if !errors.Is(err, ops.ErrChanged) || !exactHint(ops.HintsOf(err), ops.OpDLQRetry, want) {
		t.Fatalf("the same guarded retry again = %v (hints %+v); want ErrChanged and the dry run %v", err, ops.HintsOf(err), want)
	}

	// A discard: by confirm, and asking the person.
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "Timeout"})
	wantDiscard := map[string]any{"queue": q + "_dlq", "error_class": "Timeout", "limit": 2, "dry_run": true}
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Limit: 1, DryRun: true})
	if err != nil || d.Expect == "" {
		t.Fatalf("discard dry run = %+v, %v; want an expect", d, err)
	}
	yes := func(context.Context, string) (bool, error) { return true, nil }
	for _, req := range []ops.DLQDiscardRequest{
		{Filter: f, Limit: 2, Expect: d.Expect, Confirm: true},
		{Filter: f, Limit: 2, Expect: d.Expect, Ask: yes},
	} {
		_, err = svc.DLQDiscard(ctx, req)
		if !errors.Is(err, ops.ErrChanged) || !exactHint(ops.HintsOf(err), ops.OpDLQDiscard, wantDiscard) {
			t.Fatalf("discard of 2 with the expect of 1 (asking: %v) = %v (hints %+v); want ErrChanged and the dry run %v", req.Ask != nil, err, ops.HintsOf(err), wantDiscard)
		}
	}
	if n := pgtest.Live(t, s, q+"_dlq"); n != 3 {
		t.Fatalf("%d left in the DLQ; want the 3 the refused calls left", n)
	}

}
