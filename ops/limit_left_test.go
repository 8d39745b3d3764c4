package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A retry or discard by filter that stops at its limit says how many
// messages the filters still select (in a dry run: would), and its next
// step, the same call again, says so too.
func TestLimitReachedSaysHowManyAreLeft(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 8, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	f := ops.DeadFilter{Queue: q}

	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: 3, DryRun: true})
	if err != nil || !dry.LimitReached || dry.Left != 5 {
		t.Fatalf("dry run: limit reached %v, left %d, %v; want 5 left", dry.LimitReached, dry.Left, err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: 3})
	if err != nil || r.Retried != 3 || r.Left != 5 {
		t.Fatalf("retry: %d retried, left %d, %v; want 3 and 5 left", r.Retried, r.Left, err)
	}
	again := findHint(t, r.Next, ops.OpDLQRetry)
	if !strings.Contains(again.Why, "5 more messages match") || again.Args["limit"] != 3 {
		t.Errorf("the next call %+v does not say 5 are left, or changes the limit", again)
	}
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q, Kind: "k"}, Limit: 4, Confirm: true})
	if err != nil || d.Discarded != 4 || d.Left != 1 {
		t.Fatalf("discard: %d discarded, left %d, %v; want 4 and 1 left", d.Discarded, d.Left, err)
	}
	if h := findHint(t, d.Next, ops.OpDLQDiscard); !strings.Contains(h.Why, "1 more message matches") {
		t.Errorf("the next discard %+v does not say 1 is left", h)
	}
	d, err = svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 4, Confirm: true})
	if err != nil || d.LimitReached || d.Left != 0 {
		t.Errorf("the last discard: limit reached %v, left %d, %v; want none left", d.LimitReached, d.Left, err)
	}
}
