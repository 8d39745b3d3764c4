package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A message dead-lettered past its deadline is not retried as it is,
// which would only have it dead-lettered again without running: by id,
// in a dry run and by filter (guarded by an expect or not) it fails,
// saying why, with a next step that clears the deadline. Retried with its
// deadline cleared, it runs.
func TestRetryPastTheDeadline(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	var ran atomic.Int32
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	sendExpired(t, s, q, map[string]int{"order": 7})
	pgtest.Start(t, c)
	dlq := store.DLQName(q)
	pgtest.Eventually(t, time.Minute, "the message dead-lettered past its deadline", func() bool { return pgtest.Live(t, s, dlq) == 1 })
	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(page.Items) != 1 || page.Items[0].Reason != store.ReasonDeadlineExceeded {
		t.Fatalf("DLQ of %s = %+v, %v; want one message dead-lettered at its deadline", q, page.Items, err)
	}
	id := page.Items[0].MsgID

	for _, req := range []ops.DLQRetryRequest{
		{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: q}},
		{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: q}, DryRun: true},
		{Filter: ops.DeadFilter{Queue: q}, Limit: 10},
		{Filter: ops.DeadFilter{Queue: q}, Limit: 10, DryRun: true},
	} {
		r, err := svc.DLQRetry(ctx, req)
		if err != nil {
			t.Fatalf("retry %+v: %v", req, err)
		}
		if r.Retried != 0 || r.Failed != 1 || r.DeadlinesPassed != 1 || !strings.Contains(r.FirstError, "deadline") {
			t.Errorf("retry %+v past the deadline: retried %d, failed %d, %d deadlines passed, first error %q; want it left, counted once, saying why",
				req, r.Retried, r.Failed, r.DeadlinesPassed, r.FirstError)
		}
		if !hasHint(r.Next, ops.OpDLQRetry, map[string]any{"clear_deadline": true}) {
			t.Errorf("retry %+v past the deadline: next %+v, want a retry clearing the deadline", req, r.Next)
		}
	}
	// A corrected payload goes with the retry that clears the deadline:
	// without it, the payload that failed would run.
	fixed := json.RawMessage(`{"order":8}`)
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: q}, DryRun: true, Payload: fixed})
	if err != nil || !hasHint(r.Next, ops.OpDLQRetry, map[string]any{"clear_deadline": true, "payload": fixed}) {
		t.Errorf("dry run of a corrected retry past the deadline: next %+v, %v; want a retry clearing the deadline with the corrected payload", r.Next, err)
	}
	// A dry run gives no expect for it, but a call guarded by its id (or
	// by a dry run's expect, its deadline passed since) is refused whole.
	_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10, Expect: strconv.FormatInt(id, 10)})
	var oe *ops.Error
	if !errors.As(err, &oe) || !strings.Contains(oe.Msg, "deadline") || !hasHint(oe.Hints, ops.OpDLQRetry, map[string]any{"clear_deadline": true, "dry_run": true}) {
		t.Fatalf("guarded retry past the deadline = %v; want an error saying so, with a dry run clearing the deadline next", err)
	}
	if n := pgtest.Live(t, s, dlq); n != 1 || ran.Load() != 0 {
		t.Fatalf("%d left in the DLQ and %d runs after the refused retries; want 1 and 0", n, ran.Load())
	}

	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: q}, ClearDeadline: true})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry clearing the deadline = %+v, %v", r, err)
	}
	pgtest.Eventually(t, time.Minute, "the retried message to run", func() bool { return ran.Load() == 1 })
	if n := pgtest.Live(t, s, dlq); n != 0 {
		t.Fatalf("%d messages back in the DLQ after the retry that cleared the deadline", n)
	}
}

// A dry run by filter that selects messages past their deadline among
// others offers first, of the retries, the dry run that clears deadlines, and offers no
// expect: the guarded call would refuse the whole set.
func TestDryRunWithSomeDeadlinesPassed(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Kind: "k", Reason: store.ReasonDeadlineExceeded, Headers: `{"pgbus_kind": "k", "pgbus_deadline": "2020-01-01T00:00:00Z"}`},
		pgtest.DeadSpec{Kind: "k", Message: "boom"}, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10, DryRun: true})
	if err != nil || r.Retried != 2 || r.Failed != 1 {
		t.Fatalf("dry run = %+v, %v; want 2 to move and 1 left", r, err)
	}
	if h := findHint(t, r.Next, ops.OpDLQRetry); h.Args["clear_deadline"] != true || h.Args["dry_run"] != true {
		t.Fatalf("next %+v; want the dry run clearing deadlines first among the retries", r.Next)
	}
	for _, h := range r.Next {
		if h.Args["expect"] != nil {
			t.Errorf("next offers %+v, an expect the guarded call would refuse", h)
		}
	}
}

// A retry by filter that reached its limit with some messages left for an
// error says, in its call-again hint, that the same call tries those first
// again: they are the oldest it selects.
func TestLimitedRetryHintSaysFailedComeFirst(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	sendExpired(t, s, q, map[string]int{"order": 1})
	stop := pgtest.Start(t, c)
	dlq := store.DLQName(q)
	pgtest.Eventually(t, time.Minute, "the message dead-lettered past its deadline", func() bool { return pgtest.Live(t, s, dlq) == 1 })
	// Stopped, or it would run the messages sent to be dead-lettered
	// before they are.
	stop()
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{})

	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed != 1 || r.Retried != 1 || !r.LimitReached {
		t.Fatalf("retry limit 2 over a deadline-passed message and 3 others: failed %d, retried %d, limit reached %v; want 1, 1, true", r.Failed, r.Retried, r.LimitReached)
	}
	var again *ops.Hint
	for i, h := range r.Next {
		if h.Op == ops.OpDLQRetry && h.Args["limit"] != nil {
			again = &r.Next[i]
		}
	}
	if again == nil {
		t.Fatalf("no call-again hint in %+v", r.Next)
	}
	if !strings.Contains(again.Why, "first the 1 that could not be moved") {
		t.Errorf("call-again hint %q does not say the failed message is tried first again", again.Why)
	}
}

// The guarded flow over a set a filter selects where one message passed
// its deadline and another did not: the dry run gives no expect, since
// the call guarded by it would refuse the whole set for the message past
// its deadline; its first next step, the dry run that clears deadlines,
// gives the expect, and the real call with it moves both. A message the
// filter leaves out stays.
func TestGuardedRetryOverSomeDeadlinesPassed(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	dlq := store.DLQName(q)
	pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonDeadlineExceeded, Headers: `{"pgbus_kind": "charge", "pgbus_deadline": "2020-01-01T00:00:00Z"}`},
		pgtest.DeadSpec{Kind: "charge", Message: "boom"},
		pgtest.DeadSpec{Kind: "refund", Message: "boom"})
	f := ops.DeadFilter{Queue: q, Kind: "charge"}

	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, DryRun: true})
	if err != nil || dry.Retried != 1 || dry.Failed != 1 || dry.DeadlinesPassed != 1 {
		t.Fatalf("dry run = %+v, %v; want 1 to move and 1 left for its deadline", dry, err)
	}
	if dry.Expect != "" {
		_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Expect: dry.Expect})
		t.Fatalf("dry run returned expect %q, and the real call with it = %v: a dry run gives no expect its real call refuses", dry.Expect, err)
	}
	first := findHint(t, dry.Next, ops.OpDLQRetry)
	if first.Args["clear_deadline"] != true || first.Args["dry_run"] != true || !strings.Contains(first.Why, "expect") {
		t.Fatalf("first retry of next = %+v; want the dry run clearing deadlines, saying it gives the expect", first)
	}
	hf, limit := hintFilter(t, first)
	clear, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: hf, Limit: limit, DryRun: true, ClearDeadline: true})
	if err != nil || clear.Retried != 2 || clear.Failed != 0 || clear.Expect == "" {
		t.Fatalf("dry run clearing deadlines = %+v, %v; want 2 to move, with an expect", clear, err)
	}
	real := findHint(t, clear.Next, ops.OpDLQRetry)
	if real.Args["expect"] != clear.Expect || real.Args["clear_deadline"] != true || real.Args["dry_run"] != nil {
		t.Fatalf("next of the dry run clearing deadlines = %+v; want the real call with its expect, clearing deadlines", clear.Next)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: hf, Limit: limit, Expect: clear.Expect, ClearDeadline: true})
	if err != nil || r.Retried != 2 || r.Failed != 0 {
		t.Fatalf("guarded retry with the expect = %+v, %v; want both moved", r, err)
	}
	if n := pgtest.Live(t, s, dlq); n != 1 {
		t.Fatalf("%d messages left in the DLQ; want the one the filter leaves out", n)
	}
	if n := pgtest.Live(t, s, q); n != 2 {
		t.Fatalf("%d messages back in %s; want 2", n, q)
	}
}

// sendExpired writes payload to queue with a deadline a second past, as a
// sender whose message waited past it on the way does: Send refuses one
// already passed.
func sendExpired(t *testing.T, s *store.Store, queue string, payload any) {
	t.Helper()
	m, err := engine.NewMessage(payload, engine.SendOptions{Deadline: time.Now().Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(testContext(t), queue, m); err != nil {
		t.Fatal(err)
	}
}
