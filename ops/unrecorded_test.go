package ops_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// historyAttempts lists the attempts of a view's failures, a folded run
// of them (repeated) as each of its attempts.
func historyAttempts(m ops.DeadMessage) []int {
	out := []int{}
	for _, f := range m.History {
		if f.Repeated > 0 {
			for a := f.FirstAttempt; a < f.Attempt; a++ {
				out = append(out, a)
			}
		}
		out = append(out, f.Attempt)
	}
	return out
}

// A claim that committed but never ran its job (its reply lost, its worker
// killed) counts as an attempt and records nothing: the view of the dead
// message says which attempt left no outcome, and that it still counted,
// rather than showing attempts 3 beside failures 2 and 3 alone.
func TestShowStatesAnAttemptThatLeftNoOutcome(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	_, id := pgtest.DeadAfterLostClaim(t, s, q)

	for _, full := range []bool{false, true} {
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, FullHistory: full})
		if err != nil {
			t.Fatal(err)
		}
		if b := m.DeadLetter; b == nil || b.Attempts == nil || *b.Attempts != 3 || b.MaxRetries == nil || *b.MaxRetries != 3 || b.Reason != store.ReasonMaxRetriesExceeded {
			t.Fatalf("full history %v: block %+v; want 3 attempts of max_retries 3", full, b)
		}
		if got := historyAttempts(m); !slices.Equal(got, []int{2, 3}) {
			t.Fatalf("full history %v: failures of attempts %v; want 2 and 3", full, got)
		}
		if !slices.Equal(m.UnrecordedAttempts, []int{1}) {
			t.Errorf("full history %v: unrecorded attempts %v; want [1]", full, m.UnrecordedAttempts)
		}
		want := "attempt 1 left no outcome: its worker stopped or lost its connection after taking the message, or another PGMQ client read it (pgmq.read); it still counts toward max_retries"
		if m.Unrecorded != want {
			t.Errorf("full history %v: unrecorded %q; want %q", full, m.Unrecorded, want)
		}
	}
}

// Only the attempts of the trip the message died on count: a message that
// died once with every failure recorded, was retried out of its DLQ and
// then lost its first claim has attempt 1 of its last trip unrecorded,
// although the failure of attempt 1 of its first trip is in its history.
func TestShowCountsUnrecordedAttemptsOfTheLastTripOnly(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 3 })
	id := pgtest.SendLostClaimKind(t, s, q)
	first := pgtest.FailUntilDead(t, s, q, id)
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: first})
	if err != nil || len(m.UnrecordedAttempts) != 0 || m.Unrecorded != "" || !slices.Equal(historyAttempts(m), []int{1, 2, 3}) {
		t.Fatalf("first death: unrecorded %v %q, failures %v, %v; want none unrecorded, failures 1 to 3", m.UnrecordedAttempts, m.Unrecorded, historyAttempts(m), err)
	}

	out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{first}})
	if err != nil || out.Retried != 1 || len(out.Outcomes) != 1 {
		t.Fatalf("retry: %+v, %v", out, err)
	}
	back := out.Outcomes[0].NewMsgID
	pgtest.LostClaim(t, s, q, back)
	second := pgtest.FailUntilDead(t, s, q, back)
	m, err = svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: second, FullHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := historyAttempts(m); !slices.Equal(got, []int{1, 2, 3, 2, 3}) {
		t.Fatalf("second death: failures of attempts %v; want 1, 2, 3 then 2, 3", got)
	}
	if !slices.Equal(m.UnrecordedAttempts, []int{1}) || !strings.HasPrefix(m.Unrecorded, "attempt 1 left no outcome") {
		t.Errorf("second death: unrecorded %v %q; want attempt 1", m.UnrecordedAttempts, m.Unrecorded)
	}
}

// A message whose every read was lost is dead-lettered by the next read,
// past max_retries, without running: the lost reads are the attempts that
// left no outcome, the read that dead-lettered it is none.
func TestShowOfAMessageWhoseEveryClaimWasLost(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 3 })
	id := pgtest.SendLostClaimKind(t, s, q)
	for range 3 {
		pgtest.LostClaim(t, s, q, id)
	}
	dead := pgtest.FailUntilDead(t, s, q, id)
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: dead})
	if err != nil {
		t.Fatal(err)
	}
	if b := m.DeadLetter; b == nil || b.Attempts == nil || *b.Attempts != 4 || b.MaxRetries == nil || *b.MaxRetries != 3 || b.ErrorClass != "" || len(m.History) != 0 {
		t.Fatalf("block %+v, history %v; want 4 reads of max_retries 3 and no failure", b, m.History)
	}
	want := "attempts 1 to 3 left no outcome: their workers stopped or lost their connections after taking the message, or other PGMQ clients read it (pgmq.read); they still count toward max_retries (read 4, past max_retries, dead-lettered it without running it)"
	if !slices.Equal(m.UnrecordedAttempts, []int{1, 2, 3}) || m.Unrecorded != want {
		t.Errorf("unrecorded %v %q; want [1 2 3] %q", m.UnrecordedAttempts, m.Unrecorded, want)
	}
}
