package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// holdMany sends n messages to the queue and snoozes them as an open
// breaker does, until delay from now, returning their ids in order.
func holdMany(t *testing.T, s *store.Store, queue, breaker string, n int, delay time.Duration) []int64 {
	t.Helper()
	ctx := testContext(t)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+queue+`" (vt, message) SELECT now(), '{}' FROM generate_series(1, $1)`, n); err != nil {
		t.Fatal(err)
	}
	read, err := s.Read(ctx, queue, time.Hour, n)
	if err != nil || len(read) != n {
		t.Fatalf("read of %d held messages = %d, %v", n, len(read), err)
	}
	items := make([]store.SnoozeItem, n)
	for i, m := range read {
		items[i] = store.SnoozeItem{MsgID: m.ID, Delay: delay, Breaker: breaker, ReadCount: m.ReadCount, EnqueuedAt: m.EnqueuedAt}
	}
	ids, err := s.SnoozeMany(ctx, queue, items)
	if err != nil || len(ids) != n {
		t.Fatalf("snooze of %d messages = %d, %v", n, len(ids), err)
	}
	out := make([]int64, n)
	for i, m := range read {
		out[i] = m.ID
	}
	return out
}

// releasedRow is a message of a queue as a release of held jobs left it.
type releasedRow struct {
	ID      int64
	VT      time.Time
	Held    bool // it still carries its breaker's hold
	Visible bool
}

// releasedRows reads the messages of ids in the queue, in msg_id order.
func releasedRows(t *testing.T, s *store.Store, queue string, ids []int64) []releasedRow {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT msg_id, vt, coalesce(headers ? $2, false), vt <= now() FROM pgmq."q_`+queue+`"
		WHERE msg_id = ANY($1) ORDER BY msg_id`, ids, store.HeaderBreakerHold)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[releasedRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkSpread checks that rows, the jobs of one release in the order
// they were held, are all there, the first store.ReleaseAtOnce visible at
// once without their hold, the rest still held and spread evenly over
// window after them, the last at its end.
func checkSpread(t *testing.T, rows []releasedRow, ids []int64, window time.Duration) {
	t.Helper()
	if len(rows) != len(ids) {
		t.Fatalf("%d of the %d jobs held are left after the release", len(rows), len(ids))
	}
	start := rows[0].VT
	rest := len(rows) - store.ReleaseAtOnce
	for i, r := range rows {
		if r.ID != ids[i] {
			t.Fatalf("job %d of the release is message %d; want %d", i, r.ID, ids[i])
		}
		if i > 0 && r.VT.Before(rows[i-1].VT) {
			t.Errorf("message %d is visible at %v, before message %d held before it (%v): the release is out of order", r.ID, r.VT, rows[i-1].ID, rows[i-1].VT)
		}
		if i < store.ReleaseAtOnce {
			if !r.VT.Equal(start) || !r.Visible || r.Held {
				t.Errorf("job %d of the release: %+v; want it visible at once (%v), its hold taken off", i, r, start)
			}
			continue
		}
		want := start.Add(time.Duration(float64(window) * float64(i-store.ReleaseAtOnce+1) / float64(rest)))
		if d := r.VT.Sub(want); d < -time.Millisecond || d > time.Millisecond || !r.Held {
			t.Errorf("job %d of the release: %+v; want it held until %v (%s after the first)", i, r, want, want.Sub(start))
		}
	}
	if last := rows[len(rows)-1].VT.Sub(start); last < window-time.Millisecond {
		t.Errorf("the last job released waits %s after the first; want the window, %s", last, window)
	}
}

// minuteBreaker is a new breaker of a minute's cool-off that a worker of
// queue uses.
func minuteBreaker(t *testing.T, s *store.Store, queue string) string {
	t.Helper()
	ctx := testContext(t)
	name := pgtest.Name("pay")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: queue}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// A reset of a breaker that held more jobs than run at once releases them
// spread over its cool-off, in the order they were held, the first few at
// once: all of them visible at once, as they were, met a downstream that
// limits its rate or concurrency with every one, which opened the breaker
// again. None is lost or doubled; those to come are still held (counted,
// and found by another reset); a delayed send keeps its time. A long
// cool-off spreads them over MaxReleaseWindow at most.
func TestRunHeldNowSpreadsTheRelease(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	pay, slow := pgtest.Name("pay"), pgtest.Name("slow")
	for _, c := range []store.BreakerConfig{
		{Name: pay, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour},
		{Name: slow, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: 2 * time.Hour},
	} {
		if err := s.EnsureBreaker(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordBreakerUsers(ctx, c.Name, []store.BreakerUser{{Queue: q}}); err != nil {
			t.Fatal(err)
		}
	}
	ids := holdMany(t, s, q, pay, 200, 5*time.Minute)
	delayed, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	before := releasedRows(t, s, q, []int64{delayed})

	if n, err := s.RunHeldNow(ctx, pay, nil); err != nil || n != 200 {
		t.Fatalf("RunHeldNow = %d, %v; want the 200 jobs held", n, err)
	}
	checkSpread(t, releasedRows(t, s, q, ids), ids, time.Minute)
	if held, err := s.HeldByBreaker(ctx, pay); err != nil || held[pay] > 150 {
		t.Errorf("held after the release = %v, %v; want at most the 150 still to come", held, err)
	}
	if after := releasedRows(t, s, q, []int64{delayed}); !after[0].VT.Equal(before[0].VT) {
		t.Errorf("the delayed send is visible at %v after the release; want %v, as before", after[0].VT, before[0].VT)
	}

	// A second reset releases those still to come (those whose time has
	// not come yet) again, from now; none is lost.
	if n, err := s.RunHeldNow(ctx, pay, nil); err != nil || n > 150 {
		t.Fatalf("RunHeldNow again = %d, %v; want the jobs still held, at most 150", n, err)
	}
	if got := releasedRows(t, s, q, ids); len(got) != 200 {
		t.Fatalf("%d jobs left after a second release; want 200", len(got))
	}

	// An hour's cool-off spreads them over MaxReleaseWindow.
	ids = holdMany(t, s, q, slow, store.ReleaseAtOnce+10, 2*time.Hour)
	if n, err := s.RunHeldNow(ctx, slow, nil); err != nil || n != int64(len(ids)) {
		t.Fatalf("RunHeldNow of %s = %d, %v; want %d", slow, n, err, len(ids))
	}
	checkSpread(t, releasedRows(t, s, q, ids), ids, store.MaxReleaseWindow)
	// The first of those to come is half a minute away: all are counted.
	if held, err := s.HeldByBreaker(ctx, slow); err != nil || held[slow] != 10 {
		t.Errorf("held after the release of %s = %v, %v; want the 10 still to come", slow, held, err)
	}
}

// Jobs of several levels of a queue are each spread over the whole
// window, in their order, the first of each at once: as many at once as
// from one queue.
func TestRunHeldNowSpreadsEveryLevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	levels := pgtest.Name("held")
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), levels) })
	name := minuteBreaker(t, s, levels)
	var ids [2][]int64
	for l := range 2 {
		ids[l] = holdMany(t, s, store.PriorityQueueName(levels, l), name, 100, 5*time.Minute)
	}
	if n, err := s.RunHeldNow(ctx, name, nil); err != nil || n != 200 {
		t.Fatalf("RunHeldNow = %d, %v; want the 200 jobs held", n, err)
	}
	visible := 0
	var start time.Time
	for l := range 2 {
		rows := releasedRows(t, s, store.PriorityQueueName(levels, l), ids[l])
		if len(rows) != 100 {
			t.Fatalf("level %d: %d jobs left of 100", l, len(rows))
		}
		if l == 0 {
			start = rows[0].VT
		}
		for i, r := range rows {
			if r.VT.Equal(start) && r.Visible && !r.Held {
				visible++
			}
			if i > 0 && r.VT.Before(rows[i-1].VT) {
				t.Errorf("level %d: message %d visible before message %d held before it", l, r.ID, rows[i-1].ID)
			}
		}
		if last := rows[99].VT.Sub(start); last < 59*time.Second || last > time.Minute {
			t.Errorf("level %d: the last job waits %s after the first; want about the minute of the cool-off", l, last)
		}
	}
	if visible != store.ReleaseAtOnce {
		t.Errorf("%d jobs of the two levels visible at once; want %d", visible, store.ReleaseAtOnce)
	}
}

// A release that finds its breaker open again (a job failed and opened it
// meanwhile) leaves the jobs held, until the new open period's end.
func TestRunHeldNowWhileOpenAgainKeepsHolding(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	name := minuteBreaker(t, s, q)
	ids := holdMany(t, s, q, name, 80, 5*time.Minute)
	c, err := s.BreakerFailed(ctx, name, "503")
	if err != nil || c.To != store.BreakerOpen {
		t.Fatalf("failure = %+v, %v; want the breaker open", c, err)
	}
	if n, err := s.RunHeldNow(ctx, name, nil); err != nil || n != 80 {
		t.Fatalf("RunHeldNow = %d, %v; want the 80 jobs", n, err)
	}
	rows := releasedRows(t, s, q, ids)
	if len(rows) != 80 {
		t.Fatalf("%d jobs left of 80", len(rows))
	}
	for _, r := range rows {
		if !r.VT.Equal(c.OpenUntil) || !r.Held {
			t.Fatalf("job after a release that found its breaker open: %+v; want it held until %v", r, c.OpenUntil)
		}
	}
}

// A probe that closes the breaker releases, spread over the wait the
// downstream's last Retry-After asked for, both the jobs held beside it
// and those held until its open period ended that no worker read yet,
// visible since, in the order they were held; a message sent meanwhile,
// visible too, is left as it is.
func TestProbeCloseSpreadsTheRelease(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	name := minuteBreaker(t, s, q)
	if _, err := s.BreakerFailedWith(ctx, name, store.FailedCall{Error: "429 Too Many Requests", Class: "http.429", RetryAfter: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ids := holdMany(t, s, q, name, 120, time.Minute)
	// The cool-off is over: the jobs held until its end are visible.
	var openUntil time.Time
	if err := s.Pool().QueryRow(ctx, `UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 second' WHERE name = $1 RETURNING open_until`,
		name).Scan(&openUntil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" SET vt = $2 WHERE msg_id = ANY($1)`, ids, openUntil); err != nil {
		t.Fatal(err)
	}
	p, err := s.AcquireBreaker(ctx, name, 2*time.Hour)
	if err != nil || !p.Probe || !p.HeldFrom.Equal(openUntil) {
		t.Fatalf("verdict after the cool-off = %+v, %v; want the probe, its holds from %v", p, err, openUntil)
	}
	// Workers read 30 of them while the probe runs, and hold them again
	// until it is taken for lost.
	read, err := s.Read(ctx, q, time.Hour, 30)
	if err != nil || len(read) != 30 {
		t.Fatalf("read beside the probe = %d, %v", len(read), err)
	}
	v, err := s.AcquireBreaker(ctx, name, 2*time.Hour)
	if err != nil || v.Allowed {
		t.Fatalf("verdict beside the probe = %+v, %v; want a wait", v, err)
	}
	items := make([]store.SnoozeItem, len(read))
	for i, m := range read {
		items[i] = store.SnoozeItem{MsgID: m.ID, Delay: v.RetryIn, Breaker: name, Probe: v.ProbeUntil, ReadCount: m.ReadCount, EnqueuedAt: m.EnqueuedAt}
	}
	if got, err := s.SnoozeMany(ctx, q, items); err != nil || len(got) != 30 {
		t.Fatalf("snooze beside the probe = %v, %v", got, err)
	}
	sent, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	sentBefore := releasedRows(t, s, q, []int64{sent})
	if _, err := s.BreakerSucceeded(ctx, name); err != nil {
		t.Fatal(err)
	}
	if n, err := s.WakeProbeHolds(ctx, name, p.ProbeUntil, p.HeldFrom); err != nil || n != 120 {
		t.Fatalf("wake after the probe closed the breaker = %d, %v; want the 120 jobs held", n, err)
	}
	checkSpread(t, releasedRows(t, s, q, ids), ids, 20*time.Second)
	if after := releasedRows(t, s, q, []int64{sent}); !after[0].VT.Equal(sentBefore[0].VT) || after[0].Held {
		t.Errorf("the message sent meanwhile: %+v; want it visible as it was", after[0])
	}
}
