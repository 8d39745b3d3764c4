package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// visibleTimes returns the visibility times of every message of queue,
// earliest first.
func visibleTimes(t *testing.T, s *store.Store, queue string) []time.Time {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT vt FROM pgmq."q_`+queue+`" ORDER BY vt`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var vt time.Time
		if err := rows.Scan(&vt); err != nil {
			t.Fatal(err)
		}
		out = append(out, vt)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// spaced fails unless times are exactly gap apart, the first at first
// (when not zero), and the report's VisibleUntil is the last.
func spaced(t *testing.T, what string, times []time.Time, n int, first time.Time, gap time.Duration, rep store.RetryReport) {
	t.Helper()
	if len(times) != n || rep.Retried != n {
		t.Fatalf("%s: %d messages back, %d reported retried; want %d", what, len(times), rep.Retried, n)
	}
	if !first.IsZero() && !times[0].Equal(first) {
		t.Errorf("%s: the first is visible at %s, want %s", what, times[0], first)
	}
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d != gap {
			t.Fatalf("%s: messages %d and %d are %s apart, want %s", what, i-1, i, d, gap)
		}
	}
	if !rep.VisibleUntil.Equal(times[len(times)-1]) {
		t.Errorf("%s: VisibleUntil %s, want the last one's %s", what, rep.VisibleUntil, times[len(times)-1])
	}
}

// A paced retry by ids makes the messages visible one after another, Pace
// apart from PaceFrom, an id that is in no DLQ taking no turn; a worker's
// read meanwhile gets only those whose turn came.
func TestRetryDeadPacedByIDs(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 4, "k", "E", store.ReasonNonRetryable)
	var now time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	from := now.Add(-time.Minute).Truncate(time.Microsecond)
	rep, err := s.RetryDead(ctx, q, append([]int64{999_999}, ids...), store.RetryOptions{Pace: time.Hour, PaceFrom: from})
	if err != nil || rep.Failed != 1 {
		t.Fatalf("retry = %+v, %v; want the unknown id failed", rep, err)
	}
	spaced(t, "by ids", visibleTimes(t, s, q), 4, from, time.Hour, rep)
	got, err := s.Read(ctx, q, time.Minute, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("a read right after the retry got %d messages (%v); want the one whose turn came", len(got), err)
	}
}

// A paced retry by filter counts on across its pages, starting at the
// database's time when PaceFrom is zero; so does one bound to its dry
// run's token, and a dry run paces nothing.
func TestRetryDeadMatchingPaced(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	deadN(t, s, q, 600, "k", "E", store.ReasonNonRetryable) // more than one page
	var before time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT now()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 1000, store.RetryOptions{Pace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	times := visibleTimes(t, s, q)
	spaced(t, "by filter", times, 600, time.Time{}, time.Second, rep)
	if times[0].Before(before) || times[0].After(before.Add(time.Minute)) {
		t.Errorf("the first is visible at %s; want the database's time at the call, after %s", times[0], before)
	}

	guarded := newQueue(t, s)
	deadN(t, s, guarded, 3, "k", "E", store.ReasonNonRetryable)
	dry, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: guarded}, 10, store.RetryOptions{DryRun: true, Pace: time.Minute})
	if err != nil || dry.Retried != 3 || !dry.VisibleUntil.IsZero() || len(visibleTimes(t, s, guarded)) != 0 {
		t.Fatalf("dry run = %+v, %v; want 3 that would move, nothing moved or paced", dry, err)
	}
	from := before.Add(time.Hour).Truncate(time.Microsecond)
	rep, err = s.RetryDeadMatching(ctx, store.DeadFilter{Queue: guarded}, 10, store.RetryOptions{Expect: dry.Token, Pace: time.Minute, PaceFrom: from})
	if err != nil {
		t.Fatal(err)
	}
	spaced(t, "by filter, guarded", visibleTimes(t, s, guarded), 3, from, time.Minute, rep)
}

// Without a pace every message is visible at once; a negative pace, or
// one over MaxRetryPace, is refused, and nothing moves.
func TestRetryDeadPaceChecked(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 3, "k", "E", store.ReasonNonRetryable)
	_, err := s.RetryDead(ctx, q, ids, store.RetryOptions{Pace: -time.Second})
	wantErr(t, "negative pace", err, store.ErrInvalid, "out of range")
	_, err = s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{Pace: -time.Second})
	wantErr(t, "negative pace by filter", err, store.ErrInvalid, "out of range")
	_, err = s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{Pace: store.MaxRetryPace + time.Nanosecond})
	wantErr(t, "a pace over a day", err, store.ErrInvalid, "at most 24h0m0s")
	if n := len(visibleTimes(t, s, q)); n != 0 {
		t.Fatalf("%d messages moved by refused retries", n)
	}
	rep, err := s.RetryDead(ctx, q, ids, store.RetryOptions{})
	if err != nil || !rep.VisibleUntil.IsZero() {
		t.Fatalf("retry = %+v, %v; want no VisibleUntil without a pace", rep, err)
	}
	got, err := s.Read(ctx, q, time.Minute, 10)
	if err != nil || len(got) != 3 || slices.ContainsFunc(got, func(m store.Message) bool { return m.ReadCount != 1 }) {
		t.Fatalf("a read after an unpaced retry got %d messages (%v); want all 3", len(got), err)
	}
}

// A guarded paced retry moves its messages in one transaction, so none is
// visible before it commits: a pace whose start passed while it moved
// them (a long transaction, here a PaceFrom an hour back) starts at the
// end of its moves instead, still Pace apart, rather than making every
// message whose turn passed meanwhile visible at once at the commit.
func TestRetryDeadGuardedPaceStartsAtCommit(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	deadN(t, s, q, 3, "k", "E", store.ReasonNonRetryable)
	dry, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{DryRun: true, Pace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var before time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	from := before.Add(-time.Hour).Truncate(time.Microsecond)
	rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{Expect: dry.Token, Pace: time.Minute, PaceFrom: from})
	if err != nil {
		t.Fatal(err)
	}
	times := visibleTimes(t, s, q)
	spaced(t, "guarded, its pace's start passed", times, 3, time.Time{}, time.Minute, rep)
	if times[0].Before(before) {
		t.Errorf("the first is visible at %s, before the retry committed (after %s): every message whose turn passed meanwhile became visible at once", times[0], before)
	}
}
