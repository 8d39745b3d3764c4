package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A dead message that died again after retries out of a DLQ has a retry
// as its next step all the same, saying first to find what those retries
// left unfixed; one that died once keeps the plain retry.
func TestShowOfAMessageThatCameBack(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "once"},
		pgtest.DeadSpec{Kind: "back", Headers: `{"pgbus_kind": "back", "pgbus_dlq_retries": 2}`})
	for i, want := range []string{"once the cause is fixed, put it back on its queue",
		"it died again after 2 retries out of a DLQ, so first find what those retries left unfixed; then put it back on its queue"} {
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[i]})
		if err != nil || len(m.Next) == 0 || m.Next[0].Op != ops.OpDLQRetry || !strings.HasPrefix(m.Next[0].Why, want) {
			t.Errorf("show of message %d: next %+v, %v; want a retry that says %q", ids[i], m.Next, err, want)
		}
	}
}

// A retry by ids in two DLQs counts the messages that came back in
// both, in its dry run and its real call.
func TestRetryByIDsCountsComebacksOfEveryDLQ(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	back := pgtest.DeadSpec{Kind: "back", Headers: `{"pgbus_kind": "back", "pgbus_dlq_retries": 1}`}
	// Ids apart from other queues', as every test's are (pgtest.DLQStart).
	first := pgtest.DLQStart()
	a, b := newQueueAt(t, s, first, nil), newQueueAt(t, s, first+1000, nil)
	ids := append(pgtest.DeadLetter(t, s, a, back, pgtest.DeadSpec{}), pgtest.DeadLetter(t, s, b, back)...)
	for _, dry := range []bool{true, false} {
		out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, DryRun: dry})
		if err != nil || out.Retried != 3 || out.CameBack != 2 {
			t.Fatalf("retry of %v (dry run %v) = %d retried, %d came back, %v; want 3 and 2", ids, dry, out.Retried, out.CameBack, err)
		}
	}
}
