package tools_test

import (
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus_dlq_summary by error_class counts every dead message by error
// class across the DLQs, the largest class first, each with its reasons
// and the DLQs it touches, and names the summary of the largest class's
// groups as the next step; by error_class with a cursor is refused.
func TestDLQSummaryByErrorClass(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	a, b, c := newQueue(t, e.st), newQueue(t, e.st), newQueue(t, e.st)
	// One class in three DLQs, under several error patterns and reasons:
	// five groups; another in one.
	pgtest.DeadLetterN(t, e.st, a, 3, pgtest.DeadSpec{Kind: "k", Class: "net.Timeout", Message: "dial tcp: i/o timeout"})
	pgtest.DeadLetterN(t, e.st, b, 2, pgtest.DeadSpec{Kind: "j", Class: "net.Timeout", Message: "read: connection reset"})
	pgtest.DeadLetterN(t, e.st, b, 1, pgtest.DeadSpec{Kind: "j", Class: "net.Timeout", Reason: store.ReasonNonRetryable, Message: "tls handshake"})
	pgtest.DeadLetterN(t, e.st, c, 1, pgtest.DeadSpec{Kind: "k", Class: "net.Timeout", Message: "x"})
	pgtest.DeadLetterN(t, e.st, c, 2, pgtest.DeadSpec{Kind: "k", Class: "db.Deadlock", Message: "y"})

	sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"by": "error_class"})
	if len(sum.Groups) != 0 || sum.TotalClasses != 2 || len(sum.Classes) != 2 || sum.Total != 9 {
		t.Fatalf("by error class: %d groups, %d of %d classes, total %d; want 2 classes of 9 messages, no groups", len(sum.Groups), len(sum.Classes), sum.TotalClasses, sum.Total)
	}
	top := sum.Classes[0]
	// Largest first, the two of 3 by name.
	tied := []ops.DLQCount{{DLQ: store.DLQName(a), Count: 3}, {DLQ: store.DLQName(b), Count: 3}}
	if tied[1].DLQ < tied[0].DLQ {
		tied[0], tied[1] = tied[1], tied[0]
	}
	wantQueues := fmt.Sprint(append(tied, ops.DLQCount{DLQ: store.DLQName(c), Count: 1}))
	if top.ErrorClass != "net.Timeout" || top.Count != 7 || fmt.Sprint(top.Queues) != wantQueues {
		t.Errorf("largest class %+v; want net.Timeout, 7, in %s", top, wantQueues)
	}
	if want := fmt.Sprint([]ops.ReasonCount{{Reason: store.ReasonMaxRetriesExceeded, Count: 6}, {Reason: store.ReasonNonRetryable, Count: 1}}); fmt.Sprint(top.Reasons) != want {
		t.Errorf("reasons %v, want %s", top.Reasons, want)
	}
	if len(sum.Next) == 0 || sum.Next[0].Op != "pgbus_dlq_summary" || sum.Next[0].Args["error_class"] != "net.Timeout" {
		t.Errorf("next %+v; want the summary of net.Timeout's groups first", sum.Next)
	}
	groups := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", sum.Next[0].Args)
	if groups.TotalGroups != 4 || groups.Total != 7 {
		t.Errorf("the groups of net.Timeout: %d groups of %d messages, want 4 of 7", groups.TotalGroups, groups.Total)
	}
	narrow := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"by": "error_class", "queue": c, "since": "1h"})
	if len(narrow.Classes) != 2 || narrow.Total != 3 {
		t.Errorf("by error class of %s in the last hour: %+v; want its 2 classes, 3 messages", c, narrow.Classes)
	}
	e.callErr(t, "pgbus_dlq_summary", map[string]any{"by": "error_class", "cursor": "abc"}, "cursor")
	e.callErr(t, "pgbus_dlq_summary", map[string]any{"by": "kind"}, "by")
}
