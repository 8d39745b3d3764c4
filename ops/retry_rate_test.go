package ops_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// liveTimes returns the visibility times of the messages of queues,
// earliest first.
func liveTimes(t *testing.T, s *store.Store, queues ...string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, q := range queues {
		rows, err := s.Pool().Query(testContext(t), `SELECT vt FROM pgmq."q_`+q+`"`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var vt time.Time
			if err := rows.Scan(&vt); err != nil {
				t.Fatal(err)
			}
			out = append(out, vt)
		}
		rows.Close()
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// A retry at a rate makes the messages visible one after another at that
// rate, those of one DLQ after those of the other, and says when the last
// one is; without a rate they are visible at once and the result says
// nothing of it.
func TestRetryAtARate(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	a, b := newQueue(t, s, nil), newQueue(t, s, nil)
	ids := append(pgtest.DeadLetterN(t, s, a, 2, pgtest.DeadSpec{}), pgtest.DeadLetterN(t, s, b, 2, pgtest.DeadSpec{})...)

	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Rate: 2})
	if err != nil || r.Retried != 4 || r.VisibleUntil == nil {
		t.Fatalf("retry at 2 a second = %+v, %v; want 4 retried and when the last is visible", r, err)
	}
	times := liveTimes(t, s, a, b)
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d != 500*time.Millisecond {
			t.Fatalf("visible at %v: messages %d and %d are %s apart, want 500ms", times, i-1, i, d)
		}
	}
	if !r.VisibleUntil.Equal(times[3]) {
		t.Errorf("visible_until %s, want the last message's %s", r.VisibleUntil, times[3])
	}

	c := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, c, 3, pgtest.DeadSpec{})
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: c}, Limit: 10, Rate: 1.0 / 60})
	if err != nil || r.Retried != 3 || r.VisibleUntil == nil {
		t.Fatalf("retry by filter at one a minute = %+v, %v", r, err)
	}
	if times := liveTimes(t, s, c); times[2].Sub(times[0]) != 2*time.Minute || !r.VisibleUntil.Equal(times[2]) {
		t.Errorf("visible at %v, visible_until %s; want a minute apart, the last reported", times, r.VisibleUntil)
	}
	var args string
	if err := s.Pool().QueryRow(ctx, `SELECT arguments::text FROM pgbus.audit_log WHERE arguments->'filter'->>'queue' = $1`, c).Scan(&args); err != nil || !strings.Contains(args, `"rate": 0.016`) {
		t.Errorf("audit arguments %s (%v) do not record the rate", args, err)
	}

	// The next steps keep the rate: the dry run's real call, and the call
	// that moves what the limit left, once this one's messages are all
	// visible.
	e := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, e, 3, pgtest.DeadSpec{})
	before := time.Now()
	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: e}, Limit: 2, Rate: 4, DryRun: true})
	after := time.Now()
	if err != nil || !hasHint(dry.Next, ops.OpDLQRetry, map[string]any{"expect": dry.Expect, "rate": 4.0}) {
		t.Fatalf("dry run at a rate: next %+v, %v; want the real call at the same rate", dry.Next, err)
	}
	// The dry run's 2 messages, at 4 a second, would take 250ms from the
	// call's time, on the database's clock as the service last measured
	// it: up to half a round trip off this process's, which a loaded
	// machine makes tens of milliseconds; a pace counted one message more
	// or less would be 250ms off.
	const gap, clockError = 250 * time.Millisecond, 100 * time.Millisecond
	if dry.VisibleUntil == nil || dry.VisibleUntil.Before(before.Add(gap-clockError)) || dry.VisibleUntil.After(after.Add(gap+clockError)) {
		t.Errorf("dry run at a rate: visible_until %v; want 250ms after a time between %s and %s", dry.VisibleUntil, before, after)
	}
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: e}, Limit: 2, Rate: 4})
	if err != nil || !r.LimitReached || !hasHint(r.Next, ops.OpDLQRetry, map[string]any{"rate": 4.0, "limit": 2}) {
		t.Fatalf("paced retry that reached its limit: %+v, %v; want the same call again at the same rate", r, err)
	}
	for _, h := range r.Next {
		if h.Op == ops.OpDLQRetry && !strings.Contains(h.Why, "twice the rate") {
			t.Errorf("the next paced call's why %q does not say to wait for this one's messages", h.Why)
		}
	}

	d := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, d, 2, pgtest.DeadSpec{})
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: d}, Limit: 10})
	if err != nil || r.Retried != 2 || r.VisibleUntil != nil {
		t.Fatalf("retry without a rate = %+v, %v; want no visible_until", r, err)
	}
	if waiting := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+d+`" WHERE vt <= now()`); waiting != 2 {
		t.Errorf("without a rate %d of the 2 messages are visible, want both at once", waiting)
	}
}

// A rate out of range is refused, saying the range, and nothing moves.
func TestRetryRateOutOfRange(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	for _, rate := range []float64{-1, 0.001, 10_001, math.NaN(), math.Inf(1)} {
		for _, req := range []ops.DLQRetryRequest{
			{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Rate: rate},
			{Filter: ops.DeadFilter{Queue: q}, Limit: 10, Rate: rate, DryRun: true},
		} {
			_, err := svc.DLQRetry(ctx, req)
			if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "one a minute") {
				t.Errorf("rate %v: %v; want it refused with the range", rate, err)
			}
		}
	}
	// A rate too low for the limit would hide the messages for months.
	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100_000, Rate: 0.1})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "would take 12 days") || !strings.Contains(err.Error(), "give rate 0.166 or more") {
		t.Errorf("100,000 at 0.1 a second: %v; want it refused, saying how long it would take and the least rate", err)
	}
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100_000, Rate: 0.2, DryRun: true}); err != nil || r.Retried != 2 {
		t.Errorf("100,000 at 0.2 a second, a dry run: %+v, %v; want it taken", r, err)
	}
	if n := pgtest.Live(t, s, store.DLQName(q)); n != 2 {
		t.Fatalf("%d messages left in the DLQ, want both", n)
	}
}
