package ops_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A list of dead messages counts, for each, the attempts of the trip it
// died on that left no outcome, as the view of one message does: none for
// a message whose every attempt failed, one for a lost first claim, the
// lost claims and not the read that dead-lettered it unrun, and on a
// second trip only that trip's.
func TestListCountsUnrecordedAttempts(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	lose := func(t *testing.T, q string, id int64, n int) {
		for range n {
			pgtest.LostClaim(t, s, q, id)
		}
	}
	for _, c := range []struct {
		name string
		die  func(t *testing.T, q string) int64
		want int
	}{
		{"every attempt failed", func(t *testing.T, q string) int64 {
			return pgtest.FailUntilDead(t, s, q, pgtest.SendLostClaimKind(t, s, q))
		}, 0},
		{"first claim lost", func(t *testing.T, q string) int64 {
			id := pgtest.SendLostClaimKind(t, s, q)
			lose(t, q, id, 1)
			return pgtest.FailUntilDead(t, s, q, id)
		}, 1},
		{"every claim lost", func(t *testing.T, q string) int64 {
			id := pgtest.SendLostClaimKind(t, s, q)
			lose(t, q, id, 3)
			return pgtest.FailUntilDead(t, s, q, id)
		}, 3},
		{"second trip's first claim lost", func(t *testing.T, q string) int64 {
			id := pgtest.SendLostClaimKind(t, s, q)
			lose(t, q, id, 2)
			out, err := svc.DLQRetry(testContext(t), ops.DLQRetryRequest{IDs: []int64{pgtest.FailUntilDead(t, s, q, id)}})
			if err != nil || out.Retried != 1 {
				t.Fatalf("retry: %+v, %v", out, err)
			}
			back := out.Outcomes[0].NewMsgID
			lose(t, q, back, 1)
			return pgtest.FailUntilDead(t, s, q, back)
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// A context of its own, made once the subtest runs: the parent's
			// could run out while the subtest waits for its turn.
			ctx := testContext(t)
			q := newQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 3 })
			dead := c.die(t, q)
			page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
			if err != nil || len(page.Items) != 1 || page.Items[0].MsgID != dead {
				t.Fatalf("list: %+v, %v; want message %d", page, err, dead)
			}
			m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: dead})
			if err != nil {
				t.Fatal(err)
			}
			if got := page.Items[0].UnrecordedCount; got != c.want || got != m.UnrecordedCount {
				t.Errorf("list counts %d unrecorded attempts, the view of the message %d; want %d", got, m.UnrecordedCount, c.want)
			}
		})
	}
}

// A retrying message whose first claim was lost says so in the list of
// live messages: its second attempt failed, its first left no outcome.
func TestLiveMessagesCountUnrecordedAttempts(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.RetryingAfterLostClaim(t, s, q)
	page, err := svc.QueueMessages(testContext(t), ops.QueueMessagesRequest{Queue: q})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("queue messages: %+v, %v", page, err)
	}
	if m := page.Items[0]; m.State != store.StateRetrying || m.ReadCount != 2 || m.FailureCount != 1 || m.UnrecordedCount != 1 {
		t.Errorf("live message: state %s, %d attempts, %d failures, %d unrecorded; want retrying, 2, 1 and 1", m.State, m.ReadCount, m.FailureCount, m.UnrecordedCount)
	}
}
