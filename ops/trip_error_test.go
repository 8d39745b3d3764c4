package ops_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A message retried out of its DLQ that dies again without a failure
// recorded on its new trip (every claim of it lost, then dead-lettered
// unrun past max_retries) has a block that says no failure was recorded
// on this trip, not the error of the trip before as if it were this
// one's: that error is kept apart, as the previous trip's. A trip that
// recorded failures has its own last one in its block, and nothing of
// the previous trip.
func TestBlockOfATripWithoutFailureKeepsThePreviousErrorApart(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 3 })
	id := pgtest.SendLostClaimKind(t, s, q)
	show := func(dead int64) *ops.DeadLetter {
		t.Helper()
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: dead})
		if err != nil || m.DeadLetter == nil {
			t.Fatalf("show %d: %+v, %v", dead, m, err)
		}
		return m.DeadLetter
	}
	retry := func(dead int64) int64 {
		t.Helper()
		out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{dead}})
		if err != nil || out.Retried != 1 || len(out.Outcomes) != 1 {
			t.Fatalf("retry %d: %+v, %v", dead, out, err)
		}
		return out.Outcomes[0].NewMsgID
	}

	firstID := pgtest.FailUntilDead(t, s, q, id)
	first := show(firstID)
	if first.ErrorMessage != "downstream refused the call" || first.ErrorAttempt != 3 || first.PreviousTripError != nil {
		t.Fatalf("first death: block %+v; want the failure of attempt 3 and no previous trip's", first)
	}

	back := retry(firstID)
	for range 3 {
		pgtest.LostClaim(t, s, q, back)
	}
	dead := pgtest.FailUntilDead(t, s, q, back)
	second := show(dead)
	if second.Attempts == nil || *second.Attempts != 4 || second.RetriesFromDLQ != 1 {
		t.Fatalf("second death: block %+v; want 4 reads after 1 DLQ retry", second)
	}
	if second.ErrorClass != "" || second.ErrorMessage != "" || second.ErrorAttempt != 0 || !second.ErrorRecordedAt.IsZero() {
		t.Errorf("second death: block blames error %q %q of attempt %d at %v; no failure was recorded on this trip",
			second.ErrorClass, second.ErrorMessage, second.ErrorAttempt, second.ErrorRecordedAt)
	}
	p := second.PreviousTripError
	if p == nil {
		t.Fatalf("second death: no previous trip's error; want the failure of attempt 3 of the first trip")
	}
	if p.ErrorClass != first.ErrorClass || p.ErrorMessage != first.ErrorMessage || p.ErrorAttempt != 3 ||
		!p.ErrorRecordedAt.Equal(first.ErrorRecordedAt) || !p.ErrorRecordedAt.Before(second.SourceEnqueuedAt) {
		t.Errorf("second death: previous trip's error %+v; want %q %q of attempt 3 at %v, before the trip began at %v",
			p, first.ErrorClass, first.ErrorMessage, first.ErrorRecordedAt, second.SourceEnqueuedAt)
	}

	third := show(pgtest.FailUntilDead(t, s, q, retry(dead)))
	if third.ErrorMessage != "downstream refused the call" || third.ErrorAttempt != 3 || !third.ErrorRecordedAt.After(third.SourceEnqueuedAt) || third.PreviousTripError != nil {
		t.Errorf("third death: block %+v, previous %+v; want this trip's failure of attempt 3 and no previous trip's", third, third.PreviousTripError)
	}
}
