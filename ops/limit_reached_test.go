package ops_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// limitMove is one retry or discard by filter of a limit-reached test:
// what it moved (or would), whether it says the limit was reached, its next
// steps and its expect.
type limitMove struct {
	n       int
	reached bool
	next    []ops.Hint
	expect  string
}

// moveByFilter runs a retry or discard by filter of q with limit.
func moveByFilter(t *testing.T, svc *ops.Service, op, q string, limit int, dry bool, expect string) limitMove {
	t.Helper()
	ctx := testContext(t)
	f := ops.DeadFilter{Queue: q}
	if op == ops.OpDLQRetry {
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: limit, DryRun: dry, Expect: expect})
		if err != nil {
			t.Fatal(err)
		}
		return limitMove{r.Retried, r.LimitReached, r.Next, r.Expect}
	}
	r, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Limit: limit, DryRun: dry, Expect: expect, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	return limitMove{r.Discarded, r.LimitReached, r.Next, r.Expect}
}

// againHint finds the next step that calls op again for the messages past
// the limit: op's hint without an expect (the real call of a dry run has
// one).
func againHint(next []ops.Hint, op string) (ops.Hint, bool) {
	i := slices.IndexFunc(next, func(h ops.Hint) bool { return h.Op == op && h.Args["expect"] == nil })
	if i < 0 {
		return ops.Hint{}, false
	}
	return next[i], true
}

// A retry or discard by filter says the limit was reached, with a call for
// the rest, only when more messages match than the limit: exactly as many
// as the limit leaves nothing, and a call again would find nothing. So for
// a real call, a dry run, and a call guarded by the dry run's expect.
func TestLimitReachedOnlyWhenMoreMatch(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	const limit = 3
	for _, op := range []string{ops.OpDLQRetry, ops.OpDLQDiscard} {
		for _, mode := range []string{"real", "dry run", "expect"} {
			for _, dead := range []int{limit, limit + 1} {
				t.Run(fmt.Sprintf("%s/%s/%d dead", op, mode, dead), func(t *testing.T) {
					q := newQueue(t, s, nil)
					ids := pgtest.DeadLetterN(t, s, q, dead, pgtest.DeadSpec{})
					expect := ""
					if mode == "expect" {
						expect = moveByFilter(t, svc, op, q, limit, true, "").expect
					}
					m := moveByFilter(t, svc, op, q, limit, mode == "dry run", expect)
					h, hinted := againHint(m.next, op)
					more := dead > limit
					if m.n != limit || m.reached != more || hinted != more {
						t.Fatalf("moved %d, limit reached %v, call-again hint %v (%+v); want %d, %v and %v", m.n, m.reached, hinted, m.next, limit, more, more)
					}
					if more && (fmt.Sprint(h.Args["limit"]) != fmt.Sprint(limit) || h.Args["queue"] != q) {
						t.Errorf("the call-again hint %+v; want the same queue and limit", h)
					}
					left := dead
					if mode != "dry run" {
						left = dead - limit
					}
					if got := pgtest.Live(t, s, q+"_dlq"); got != left {
						t.Fatalf("the DLQ holds %d; want %d", got, left)
					}
					if more && mode != "dry run" && !inDLQ(t, s, q, ids[limit]) {
						t.Errorf("the newest message %d, past the limit, left the DLQ", ids[limit])
					}
				})
			}
		}
	}
}
