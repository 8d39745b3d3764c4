package ops_test

import (
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// historyRuns lists a view's failures as [first attempt, last attempt,
// times] each, a failure that happened once as [attempt, attempt, 1].
func historyRuns(m ops.DeadMessage) [][3]int {
	out := [][3]int{}
	for _, f := range m.History {
		if f.Repeated > 0 {
			out = append(out, [3]int{f.FirstAttempt, f.Attempt, f.Repeated})
			continue
		}
		out = append(out, [3]int{f.Attempt, f.Attempt, 1})
	}
	return out
}

// Identical failures of two trips (the message retried out of its DLQ in
// between) are not one run of failures in a row: the view folds each
// trip's own, and keeps the trips apart, whether its attempts start again
// from 1 or go on past the last trip's because the new trip's first
// claims were lost.
func TestHistoryDoesNotFoldFailuresAcrossTrips(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})

	trip := func(t *testing.T, q string, id int64, lost int) int64 {
		for range lost {
			pgtest.LostClaim(t, s, q, id)
		}
		return pgtest.FailUntilDead(t, s, q, id)
	}
	retry := func(t *testing.T, dead int64) int64 {
		out, err := svc.DLQRetry(testContext(t), ops.DLQRetryRequest{IDs: []int64{dead}})
		if err != nil || out.Retried != 1 || len(out.Outcomes) != 1 {
			t.Fatalf("retry %d: %+v, %v", dead, out, err)
		}
		return out.Outcomes[0].NewMsgID
	}
	for _, c := range []struct {
		name          string
		first, second int // max_retries of each trip
		lost          int // claims the second trip lost first
		want          [][3]int
	}{
		{"attempts start again", 3, 3, 0, [][3]int{{1, 3, 3}, {1, 3, 3}}},
		{"attempts go on past the last trip's", 1, 3, 1, [][3]int{{1, 1, 1}, {2, 3, 2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// A context of its own, made once the subtest runs: the parent's
			// could run out while the subtest waits for its turn.
			ctx := testContext(t)
			q := newQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = c.first })
			id := pgtest.SendLostClaimKind(t, s, q)
			dead := trip(t, q, id, 0)
			pgtest.SetFastSettings(t, s, q, func(set *store.QueueSettings) { set.MaxRetries = c.second })
			dead = trip(t, q, retry(t, dead), c.lost)
			m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: dead})
			if err != nil {
				t.Fatal(err)
			}
			if got := historyRuns(m); !slices.Equal(got, c.want) {
				t.Errorf("history runs (first attempt, last attempt, times) %v; want %v", got, c.want)
			}
			if m.FailureCount != c.first+c.second-c.lost {
				t.Errorf("failure count %d; want %d", m.FailureCount, c.first+c.second-c.lost)
			}
		})
	}
}
