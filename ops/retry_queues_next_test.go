package ops_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A retry by filter whose messages go back to several queues names each
// of them in its next steps, one step to watch each, up to five, and
// the others by name in a last step that lists every queue, with how
// many it leaves unnamed past a bound.
func TestRetryNextNamesEachQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, n := range []int{3, 8, 20} {
		kind := uniqueName("spread")
		var queues []string
		for range n {
			q := newQueue(t, s, nil)
			queues = append(queues, q)
			pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: kind})
		}
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Kind: kind}, Limit: 100})
		if err != nil || r.Retried != n {
			t.Fatalf("retry of %d: %+v, %v", n, r, err)
		}
		var watched []string
		var rest []ops.Hint
		for _, h := range r.Next {
			switch h.Op {
			case ops.OpQueueMessages:
				watched = append(watched, fmt.Sprint(h.Args["queue"]))
			case ops.OpQueueStats:
				rest = append(rest, h)
			}
		}
		slices.Sort(watched)
		if len(watched) != min(n, 5) || !slices.ContainsFunc(queues, func(q string) bool { return q == watched[0] }) {
			t.Errorf("retry into %d queues: steps watch %v, want %d of %v", n, watched, min(n, 5), queues)
		}
		if n <= 5 {
			if len(rest) != 0 {
				t.Errorf("retry into %d queues: %+v, want no step for other queues", n, rest)
			}
			continue
		}
		if len(rest) != 1 {
			t.Fatalf("retry into %d queues: next %+v, want one step naming the other %d", n, r.Next, n-5)
		}
		named := 0
		for _, q := range queues {
			if strings.Contains(rest[0].Why, q) {
				named++
			}
		}
		if want := min(n, 15) - 5; named != want {
			t.Errorf("retry into %d queues: the last step %q names %d queues, want %d", n, rest[0].Why, named, want)
		}
		if more := fmt.Sprintf("and %d more", n-15); n > 15 && !strings.Contains(rest[0].Why, more) {
			t.Errorf("retry into %d queues: the last step %q does not say %q", n, rest[0].Why, more)
		}
	}
}
