package ops_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A retry by filter whose limit selects only messages it cannot move (their
// deadline passed) gives the list of what is still dead once, saying both
// why it is shown, not twice with the same operation and arguments; so do
// its dry run and a discard.
func TestNextStepsAreUnique(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom",
		Headers: `{"pgbus_kind": "k", "pgbus_deadline": "2020-01-01T00:00:00Z"}`})

	unique := func(what string, next []ops.Hint) {
		t.Helper()
		seen := map[string]bool{}
		for _, h := range next {
			key := h.Op + " " + fmt.Sprint(h.Args)
			if seen[key] {
				t.Errorf("%s: next %+v lists %s twice", what, next, key)
			}
			seen[key] = true
		}
	}
	for _, dry := range []bool{true, false} {
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1, DryRun: dry})
		if err != nil || r.Failed != 1 || !r.LimitReached {
			t.Fatalf("retry (dry run %t) of messages past their deadline: %+v, %v; want 1 failed and the limit reached", dry, r, err)
		}
		unique(fmt.Sprintf("retry (dry run %t)", dry), r.Next)
		i := slices.IndexFunc(r.Next, func(h ops.Hint) bool { return h.Op == ops.OpDLQList })
		if i < 0 || r.Next[i].Args["queue"] != q || !strings.Contains(r.Next[i].Why, "still dead") || !strings.Contains(r.Next[i].Why, "could not be moved") {
			t.Errorf("retry (dry run %t): next %+v; want the list of what is still dead, saying that the oldest could not be moved", dry, r.Next)
		}
	}
}
