package ops_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Jobs a worker's open breaker snoozed are shown held by it (scheduled,
// with a reset to offer), and a reset runs them at once: with a cool-off
// of an hour they would otherwise wait that hour. A snooze by the handler
// itself is not the breaker's to end.
func TestCircuitResetRunsTheJobsItHeld(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 10 })
	name := uniqueName("bank")
	cfg := &store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: 2 * time.Hour}
	var healthy atomic.Bool
	var ran atomic.Int32
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("call", func(ctx context.Context, job *engine.Job) error {
		if !healthy.Load() {
			return errors.New("503 from the bank")
		}
		ran.Add(1)
		return nil
	}, engine.HandlerOptions{Breaker: cfg})
	c.Handle("later", func(ctx context.Context, job *engine.Job) error { return engine.Snooze(time.Hour) })
	pgtest.Start(t, c)
	svc := newService(t, s, ops.Options{})

	first := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "call"})
	pgtest.Eventually(t, 30*time.Second, "the first job's failure to open the breaker", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1 AND state = 'open'`, name) == 1
	})
	// The first job's retry and a new one meet the breaker open.
	if _, err := s.RunNow(ctx, q, store.RunNowOptions{}); err != nil {
		t.Fatal(err)
	}
	second := pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "call"})
	snoozed := pgtest.Send(t, c, q, 3, engine.SendOptions{Kind: "later"})
	var page ops.LiveMessages
	pgtest.Eventually(t, 30*time.Second, "both jobs held by the breaker", func() bool {
		var err error
		page, err = svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, State: store.StateScheduled})
		return err == nil && len(page.Items) == 3 && page.Items[0].HeldBy == name && page.Items[1].HeldBy == name
	})
	if page.Items[0].MsgID != first || page.Items[1].MsgID != second || page.Items[2].MsgID != snoozed || page.Items[2].HeldBy != "" {
		t.Fatalf("scheduled messages: %+v; want %d and %d held by %s, %d held by none", page.Items, first, second, name, snoozed)
	}
	// The hold is held_by; its mark, pgbus's own, is no header to read.
	for _, m := range page.Items {
		if strings.Contains(string(m.Headers), store.HeaderBreakerHold) {
			t.Errorf("message %d shows the internal header %s: %s", m.MsgID, store.HeaderBreakerHold, m.Headers)
		}
	}
	resets := 0
	for _, h := range page.Next {
		if h.Op == ops.OpCircuitReset && h.Args["name"] == name {
			resets++
		}
	}
	if resets != 1 {
		t.Fatalf("next steps of a page of held jobs: %+v; want one reset of %s", page.Next, name)
	}

	healthy.Store(true)
	r, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name})
	if err != nil || r.Released != 2 || !r.Changed || r.Was != store.BreakerOpen {
		t.Fatalf("reset = %+v, %v; want the 2 held jobs made visible", r, err)
	}
	// The handler returns before its outcome is written: the jobs are
	// done once only the one its handler snoozed is left.
	pgtest.Eventually(t, 30*time.Second, "the held jobs to run after the reset, and only the snoozed one left", func() bool {
		live, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
		return ran.Load() == 2 && err == nil && len(live.Items) == 1 && live.Items[0].MsgID == snoozed
	})
	if r, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name}); err != nil || r.Released != 0 || r.Changed {
		t.Fatalf("second reset = %+v, %v; want nothing left to change", r, err)
	}
}

// A breaker opened by hand holds the jobs that use it, which do not run
// and use no attempt, while the queue's other jobs run; a reset runs them.
// The opening is audited; a missing or bad name, a time out of range and
// a read-only server are refused, each saying what to do.
func TestCircuitOpenHoldsJobs(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	name := uniqueName("maint")
	cfg := &store.BreakerConfig{Name: name, FailureThreshold: 3, CoolOff: time.Minute, MaxCoolOff: time.Hour}
	var calls, others atomic.Int32
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("call", func(ctx context.Context, job *engine.Job) error { calls.Add(1); return nil }, engine.HandlerOptions{Breaker: cfg})
	c.Handle("other", func(ctx context.Context, job *engine.Job) error { others.Add(1); return nil })
	pgtest.Start(t, c)
	svc := newService(t, s, ops.Options{})
	pgtest.Eventually(t, 30*time.Second, "the breaker to be made", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1`, name) == 1
	})

	client := uniqueName("client")
	reason := "bank maintenance until 03:00, OPS-7 https://ops.example/t?token=sk_live_abcdefghijklmnop1234"
	o, err := svc.CircuitOpen(ops.WithClient(ctx, client), ops.CircuitOpenRequest{Name: name, For: time.Hour, Reason: reason})
	if err != nil || o.State != store.BreakerOpen || o.Was != store.BreakerClosed || o.OpenUntil.Before(time.Now().Add(59*time.Minute)) ||
		len(o.Next) != 2 || o.Next[1].Op != ops.OpCircuitReset || o.OpenedByHand.By != client || o.Replaced != nil {
		t.Fatalf("open = %+v, %v; want it open for an hour by %s, the reset offered", o, err, client)
	}
	// Whoever looks at the breaker meanwhile sees who opened it and why,
	// the secret in the reason redacted.
	cs, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: name})
	if err != nil || len(cs.Circuits) != 1 || cs.Circuits[0].OpenedByHand == nil || cs.Circuits[0].OpenedByHand.By != client ||
		!strings.HasPrefix(cs.Circuits[0].OpenedByHand.Reason, "bank maintenance until 03:00, OPS-7") || strings.Contains(cs.Circuits[0].OpenedByHand.Reason, "sk_live_abcdefghijklmnop1234") {
		t.Fatalf("circuits = %+v, %v; want it opened by hand by %s, its reason redacted", cs, err, client)
	}
	// Opened again (longer), the opening it replaces is said.
	again, err := svc.CircuitOpen(ops.WithCaller(ctx, ops.Caller{Client: "dashboard", Principal: "token sha256:0123abcd"}), ops.CircuitOpenRequest{Name: name, For: 2 * time.Hour})
	if err != nil || again.Was != store.BreakerOpen || again.Replaced == nil || again.Replaced.By != client || again.OpenedByHand.By != "dashboard (token sha256:0123abcd)" || again.OpenedByHand.Reason != "" {
		t.Fatalf("opened again = %+v, %v; want the earlier opening replaced, by the dashboard's token", again, err)
	}
	held := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "call"})
	pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "other"})
	pgtest.Eventually(t, 30*time.Second, "the other job to run and the call to be held", func() bool {
		page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
		return err == nil && others.Load() == 1 && len(page.Items) == 1 && page.Items[0].MsgID == held && page.Items[0].HeldBy == name && page.Items[0].ReadCount == 0
	})
	// The queue's messages point at who opened the breaker, not at a
	// reset that would end their window.
	page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
	if err != nil || len(page.Next) != 1 || page.Next[0].Op != ops.OpCircuits || !strings.Contains(page.Next[0].Why, "was opened by hand by dashboard (token sha256:0123abcd) until") {
		t.Fatalf("next steps of the held job = %+v, %v; want the breaker's opening by hand to look at", page.Next, err)
	}
	if calls.Load() != 0 {
		t.Fatalf("%d calls ran through the breaker opened by hand", calls.Load())
	}
	// A reset not asked to end the window someone opened is refused,
	// saying who and until when; its next steps are the breaker, who
	// opened it and why, first, and only then the reset that ends the
	// window, for once they agreed (an agent taking the first step on its
	// own ended a window for maintenance); the job stays held.
	resetter := uniqueName("agent")
	_, err = svc.CircuitReset(ops.WithClient(ctx, resetter), ops.CircuitResetRequest{Name: name})
	var oe *ops.Error
	if !errors.As(err, &oe) || !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), `was opened by hand by dashboard (token sha256:0123abcd) until 20`) ||
		!strings.Contains(err.Error(), "nothing was changed") || len(oe.Hints) != 2 || oe.Hints[0].Op != ops.OpCircuits ||
		oe.Hints[1].Op != ops.OpCircuitReset || oe.Hints[1].Args["end_opening_by_hand"] != true || !strings.HasPrefix(oe.Hints[1].Why, "only once whoever opened it agreed") {
		t.Fatalf("reset of a breaker opened by hand, not asked to end it: %v, hints %+v; want it refused, the breaker first, then the reset ending it once its opener agreed", err, ops.HintsOf(err))
	}
	if page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q}); err != nil || len(page.Items) != 1 || page.Items[0].HeldBy != name || calls.Load() != 0 {
		t.Fatalf("after the refused reset: %+v, %v, %d calls; want the job held still", page, err, calls.Load())
	}
	if rows := auditRows(t, s, resetter); len(rows) != 0 {
		t.Fatalf("audit of the refused reset: %+v; want none, as for every request refused by its checks", rows)
	}
	if r, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name, EndOpeningByHand: true}); err != nil || r.Released != 1 || r.WasOpenedByHand == nil || r.WasOpenedByHand.By != "dashboard (token sha256:0123abcd)" {
		t.Fatalf("reset = %+v, %v; want the held job run, the opening by hand it ended said", r, err)
	}
	if cs, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: name}); err != nil || cs.Circuits[0].OpenedByHand != nil {
		t.Fatalf("circuits after the reset = %+v, %v; want no opening by hand", cs, err)
	}
	pgtest.Eventually(t, 30*time.Second, "the held job to run after the reset", func() bool { return calls.Load() == 1 })

	for _, c := range []struct {
		req  ops.CircuitOpenRequest
		kind error
		says string
	}{
		{ops.CircuitOpenRequest{For: time.Hour}, ops.ErrInvalid, "name is required"},
		{ops.CircuitOpenRequest{Name: strings.Repeat("b", 10_000), For: time.Hour}, ops.ErrInvalid, "no breaker has a name over 200"},
		{ops.CircuitOpenRequest{Name: "a\x00b", For: time.Hour}, ops.ErrInvalid, "name"},
		{ops.CircuitOpenRequest{Name: name}, ops.ErrInvalid, "1s to 7d"},
		{ops.CircuitOpenRequest{Name: name, For: -time.Minute}, ops.ErrInvalid, "1s to 7d"},
		{ops.CircuitOpenRequest{Name: name, For: ops.MaxOpenByHand + time.Hour}, ops.ErrInvalid, "1s to 7d"},
		{ops.CircuitOpenRequest{Name: "x'; DROP TABLE pgbus.circuit_breakers; --", For: time.Hour}, ops.ErrNotFound, "does not exist"},
		{ops.CircuitOpenRequest{Name: name, For: time.Hour, Reason: strings.Repeat("r", 100_000)}, ops.ErrInvalid, "reason is 100000 bytes long; give at most 500"},
		{ops.CircuitOpenRequest{Name: name, For: time.Hour, Reason: "bad \xff utf-8"}, ops.ErrInvalid, "reason cannot be used"},
		{ops.CircuitOpenRequest{Name: name, For: time.Hour, Reason: "nul \x00 inside"}, ops.ErrInvalid, "reason cannot be used"},
	} {
		if _, err := svc.CircuitOpen(ctx, c.req); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) || len(err.Error()) > 400 {
			t.Errorf("open %.60q for %s: %.300v; want %v saying %q", c.req.Name, c.req.For, err, c.kind, c.says)
		}
	}
	ro := newService(t, s, ops.Options{ReadOnly: true})
	if _, err := ro.CircuitOpen(ctx, ops.CircuitOpenRequest{Name: name, For: time.Hour}); !errors.Is(err, ops.ErrReadOnly) {
		t.Errorf("open on a read-only server: %v; want it refused", err)
	}
	if rows := auditRows(t, s, client); len(rows) != 1 || rows[0].Tool != ops.OpCircuitOpen || rows[0].IsError || !strings.Contains(rows[0].Arguments, `"for": "1h"`) ||
		!strings.Contains(rows[0].Arguments, `"reason": "bank maintenance until 03:00`) {
		t.Fatalf("audit rows = %+v; want the one circuit_open, for 1h, with its reason", rows)
	}
	if st, err := s.ListBreakers(ctx, name); err != nil || st[0].State != store.BreakerClosed || st[0].OpenedBy != "" {
		t.Fatalf("breaker after the refused openings: %+v, %v; want it closed still", st, err)
	}
}

// The health check's reason for a breaker opened by hand says so (it
// counted no failure), and counts the jobs it holds.
func TestHealthOfABreakerOpenedByHand(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	const name = "http:maint"
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, "payments"); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-pay", Hostname: "h", PID: 1, Queues: []string{"payments"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	pgtest.Held(t, s, "payments", name)
	pgtest.Held(t, s, "payments", name)
	if _, err := svc.CircuitOpen(ops.WithClient(ctx, "cli"), ops.CircuitOpenRequest{Name: name, For: time.Hour, Reason: "bank\nmaintenance"}); err != nil {
		t.Fatal(err)
	}
	h, err := svc.Health(ctx)
	if err != nil || len(h.Reasons) != 1 {
		t.Fatalf("health = %+v, %v; want the one open breaker", h, err)
	}
	if m := h.Reasons[0].Message; h.Reasons[0].Code != "circuit_open" || !strings.Contains(m, `circuit breaker "http:maint" is open until`) ||
		!regexp.MustCompile(`is open until \S+, opened by hand by cli \("bank maintenance"\): the jobs`).MatchString(m) || strings.Contains(m, "failure") || !strings.Contains(m, `the jobs of queue "payments" that use it are held (2 jobs now), not failed`) ||
		!strings.HasSuffix(m, "until the opening by hand ends and a probe call then succeeds") {
		t.Fatalf("reason = %q", m)
	}
	// Its time up, the window is over although no job has probed yet.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 second' WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
	if cs, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: name}); err != nil || !cs.Circuits[0].ProbeDue || cs.Circuits[0].OpenedByHand != nil {
		t.Fatalf("circuits once the time is up = %+v, %v; want a probe due, no opening by hand", cs, err)
	}
	if h, err := svc.Health(ctx); err != nil || len(h.Reasons) != 1 || strings.Contains(h.Reasons[0].Message, "by cli") {
		t.Fatalf("health once the time is up = %+v, %v; want the breaker's reason without the opening by hand", h, err)
	}
}

// A reset during a probe that outlasts the slack past the open period's
// end runs the jobs held until the probe is taken for lost, in the
// breaker's users' queues and in a queue no user of it names alike: the
// search of the other queues stopped at the open period's end and the
// slack, and the job held there waited out the probe after the reset.
func TestCircuitResetDuringLongProbeRunsEveryHold(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	used := newQueue(t, s, nil)
	other := newQueue(t, s, nil)
	name := uniqueName("bank")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: used, Kind: "call"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BreakerFailed(ctx, name, "503"); err != nil {
		t.Fatal(err)
	}
	// The cool-off over, a job takes the probe, taken for lost in two
	// hours: far past the open period's end and its slack.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 second' WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
	if p, err := s.AcquireBreaker(ctx, name, 2*time.Hour); err != nil || !p.Probe {
		t.Fatalf("verdict after the cool-off = %+v, %v; want the probe", p, err)
	}
	// hold reads a new job of q and snoozes it as a worker does that the
	// breaker told to wait for the probe.
	hold := func(q string) int64 {
		t.Helper()
		id, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Read(ctx, q, time.Hour, 1)
		if err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("read of %s = %+v, %v; want message %d", q, got, err, id)
		}
		v, err := s.AcquireBreaker(ctx, name, 2*time.Hour)
		if err != nil || v.Allowed || v.ProbeUntil.IsZero() {
			t.Fatalf("verdict beside the probe = %+v, %v; want a wait for it", v, err)
		}
		item := store.SnoozeItem{MsgID: id, Delay: v.RetryIn, Breaker: name, Probe: v.ProbeUntil, ReadCount: got[0].ReadCount, EnqueuedAt: got[0].EnqueuedAt}
		if ids, err := s.SnoozeMany(ctx, q, []store.SnoozeItem{item}); err != nil || len(ids) != 1 {
			t.Fatalf("snooze of message %d = %v, %v", id, ids, err)
		}
		return id
	}
	inUsed, inOther := hold(used), hold(other)
	svc := newService(t, s, ops.Options{})
	r, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name})
	if err != nil || r.Was != store.BreakerHalfOpen || r.Released != 2 {
		t.Fatalf("reset during the probe = %+v, %v; want the 2 jobs held until its end made visible", r, err)
	}
	for q, id := range map[string]int64{used: inUsed, other: inOther} {
		if got, err := s.Read(ctx, q, time.Hour, 1); err != nil || len(got) != 1 || got[0].ID != id {
			t.Errorf("read of %s after the reset = %+v, %v; want the job %d the probe held", q, got, err, id)
		}
	}
}
