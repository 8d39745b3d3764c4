package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A dead message whose queue is gone (dropped outside pgbus, its DLQ left
// behind) cannot be retried: by id, by filter and in a dry run, it is a
// failure that says to create the queue again, not a message another call
// took, and it stays in its DLQ.
func TestRetryIntoAQueueThatIsGone(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	pgtest.Exec(t, pgtest.URL(t), `DROP TABLE pgmq."q_`+q+`", pgmq."a_`+q+`"; DELETE FROM pgmq.meta WHERE queue_name = '`+q+`'`)
	svc := newService(t, s, ops.Options{})
	for _, req := range []ops.DLQRetryRequest{
		{IDs: ids, Filter: ops.DeadFilter{Queue: q}},
		{IDs: ids, Filter: ops.DeadFilter{Queue: q}, DryRun: true},
		{Filter: ops.DeadFilter{Queue: q}, Limit: 10},
		{Filter: ops.DeadFilter{Queue: q}, Limit: 10, DryRun: true},
	} {
		r, err := svc.DLQRetry(ctx, req)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		if r.Retried != 0 || r.AlreadyMoved != 0 || r.Failed != 1 || !strings.Contains(r.FirstError, "create the queue again") {
			t.Errorf("retry %+v into a queue that is gone: retried %d, already moved %d, failed %d, first error %q; want one failure saying to create the queue",
				req, r.Retried, r.AlreadyMoved, r.Failed, r.FirstError)
		}
		for _, o := range r.Outcomes {
			if o.Outcome != ops.OutcomeFailed {
				t.Errorf("retry %+v: outcome of %d is %s, want failed", req, o.ID, o.Outcome)
			}
		}
	}
	if n := pgtest.Live(t, s, store.DLQName(q)); n != 1 {
		t.Fatalf("%d messages left in the DLQ, want the one that could not move", n)
	}
}
