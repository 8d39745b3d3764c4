package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A group's key selects exactly its messages, where kind and error class
// also select the groups that share them: a group without an error class
// next to one with, and two patterns of one class. Both ways of
// summarizing (counted groups, and a scan when the filter has times) give
// the same keys.
func TestGroupKeySelectsExactlyTheGroup(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{Bounds: ops.FullBounds})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k", Class: "", Reason: store.ReasonDeadlineExceeded})
	pgtest.DeadLetterN(t, s, q, 4, pgtest.DeadSpec{Kind: "k", Class: "context.DeadlineExceeded", Message: "downstream did not answer"})
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k", Class: "context.DeadlineExceeded", Message: "database did not answer"})

	counted, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(counted.Groups) != 3 {
		t.Fatalf("summary: %+v, %v; want 3 groups", counted, err)
	}
	scanned, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, Since: "1d"}})
	if err != nil || len(scanned.Groups) != 3 {
		t.Fatalf("summary since 1d: %+v, %v; want 3 groups", scanned, err)
	}
	keys := map[string]bool{}
	for i, g := range counted.Groups {
		if !store.IsGroupKey(g.Group) || keys[g.Group] {
			t.Fatalf("group %+v: key %q is no key, or another group's", g, g.Group)
		}
		keys[g.Group] = true
		if scanned.Groups[i].Group != g.Group {
			t.Errorf("group %d: key %q counted, %q scanned", i, g.Group, scanned.Groups[i].Group)
		}
		f := ops.DeadFilter{Queue: q, Kind: g.Kind, ErrorClass: g.ErrorClass, Group: g.Group}
		page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Limit: 100})
		if err != nil || int64(len(page.Items)) != g.Count {
			t.Errorf("list of group %q (%s, %q): %d messages, %v; want its %d", g.Group, g.ErrorClass, g.ErrorPattern, len(page.Items), err, g.Count)
		}
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, DryRun: true})
		if err != nil || int64(r.Retried) != g.Count {
			t.Errorf("dry-run retry of group %q: %d, %v; want its %d", g.Group, r.Retried, err, g.Count)
		}
		sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Group: g.Group}})
		if err != nil || len(sum.Groups) != 1 || sum.Groups[0].Count != g.Count {
			t.Errorf("summary of group %q: %+v, %v; want it alone", g.Group, sum.Groups, err)
		}
	}
	// The summary's next step lists the largest group by its key.
	if !hasHint(counted.Next, ops.OpDLQList, map[string]any{"group": counted.Groups[0].Group}) {
		t.Errorf("summary next steps %+v; want the largest group listed by its key", counted.Next)
	}
}

// A group key that is not one is refused, naming the field, before any
// query: injection attempts, huge values, upper case and near misses.
func TestBadGroupKeys(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, key := range []string{"x", "'; DROP TABLE pgbus.queues; --", strings.Repeat("a", 10_000),
		"4F9A0C7E-1B2D-3E4F-8A9B-0C1D2E3F4A5B", "4f9a0c7e1b2d3e4f8a9b0c1d2e3f4a5b", "4f9a0c7e-1b2d-3e4f-8a9b-0c1d2e3f4a5g"} {
		_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Group: key}})
		var oe *ops.Error
		if !errors.Is(err, ops.ErrInvalid) || !errors.As(err, &oe) || oe.Field != "group" {
			t.Errorf("list with group %.40q: %v; want ErrInvalid about the group field", key, err)
		}
	}
}
