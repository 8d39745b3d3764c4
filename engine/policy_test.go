package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

var errTransient = errors.New("connection reset")

type quotaError struct{}

func (quotaError) Error() string { return "account over quota" }

type hintedError struct{ after time.Duration }

func (e hintedError) Error() string             { return "slow down" }
func (e hintedError) RetryAfter() time.Duration { return e.after }

type classed struct{ class string }

func (e classed) Error() string      { return "status " + e.class }
func (e classed) ErrorClass() string { return e.class }

// Each error class follows its own policy; unmatched errors follow the
// queue's.
func TestErrorClassPolicies(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	two := engine.RetryPolicy{MaxRetries: 2, Strategy: store.BackoffExponential, Backoff: 20 * time.Millisecond, BackoffMax: time.Second}
	policies := []engine.ErrorPolicy{
		{Is: errTransient, Action: engine.ActionRetry, Retry: &two},
		{Class: "http.400", Action: engine.ActionDeadLetter},
		{Match: engine.MatchType[quotaError](), Action: engine.ActionDiscard},
		{Match: engine.MatchType[hintedError](), Action: engine.ActionRetryAfterHint},
	}
	var hintedCalls, plainCalls atomic.Int32
	c.Handle("work", func(ctx context.Context, job *engine.Job) error {
		var in struct{ Case string }
		if err := job.Decode(&in); err != nil {
			return err
		}
		switch in.Case {
		case "transient":
			return fmt.Errorf("calling bank: %w", errTransient)
		case "bad":
			return classed{"http.400"}
		case "quota":
			return quotaError{}
		case "hinted":
			if hintedCalls.Add(1) == 1 {
				return hintedError{after: 250 * time.Millisecond}
			}
			return nil
		default:
			if plainCalls.Add(1) == 1 {
				return errors.New("unmatched")
			}
			return nil
		}
	}, engine.HandlerOptions{Policies: policies})
	pgtest.Start(t, c)
	ids := map[string]int64{}
	for _, k := range []string{"transient", "bad", "quota", "hinted", "plain"} {
		ids[k] = pgtest.Send(t, c, q, map[string]string{"Case": k}, engine.SendOptions{Kind: "work"})
	}
	pgtest.Eventually(t, 30*time.Second, "every message settled", func() bool { return pgtest.Live(t, s, q) == 0 })
	dead := map[int64]map[string]any{}
	for _, d := range deadMessages(t, s, q) {
		dead[int64(d.Block["source_msg_id"].(float64))] = d.Block
	}
	if b := dead[ids["transient"]]; b == nil || b["attempts"] != 2.0 || b["max_retries"] != 2.0 || b["reason"] != store.ReasonMaxRetriesExceeded {
		t.Errorf("transient: block %v; want dead after the policy's 2 attempts", b)
	}
	if b := dead[ids["bad"]]; b == nil || b["attempts"] != 1.0 || b["reason"] != store.ReasonNonRetryable || b["error_class"] != "http.400" {
		t.Errorf("bad: block %v; want dead at once", b)
	}
	if len(dead) != 2 {
		t.Errorf("%d dead messages, want 2", len(dead))
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1 AND headers ? 'pgbus_discarded'`, ids["quota"]); n != 1 {
		t.Errorf("quota: not discarded to the archive")
	}
	if fs := failures(t, s, q, ids["hinted"]); len(fs) != 1 || fs[0].RetryAt.Sub(fs[0].FailedAt) != 250*time.Millisecond {
		t.Errorf("hinted: failures %+v; want one retry after the 250ms hint", fs)
	}
	if fs := failures(t, s, q, ids["plain"]); len(fs) != 1 || fs[0].RetryAt.Sub(fs[0].FailedAt) != 100*time.Millisecond {
		t.Errorf("plain: failures %+v; want the queue's 100ms backoff", fs)
	}
}

// A retry policy that is not retry-after-hint ignores hints.
func TestRetryPolicyIgnoresHints(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		if calls.Add(1) == 1 {
			return hintedError{after: time.Hour}
		}
		return nil
	}, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Match: engine.MatchType[hintedError](), Action: engine.ActionRetry}}})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	if fs := failures(t, s, q, id); len(fs) != 1 || fs[0].RetryAt.Sub(fs[0].FailedAt) != 100*time.Millisecond {
		t.Fatalf("failures %+v; want the backoff, not the hour-long hint", fs)
	}
}

// downstream is a fake service that fails until told to recover, and
// records how many calls ran while the breaker was half-open and how many
// found it open.
type downstream struct {
	s         *store.Store
	breaker   string
	healthy   atomic.Bool
	whileOpen atomic.Int32
	mu        sync.Mutex
	halfOpen  int
	maxProbes int
}

func (d *downstream) handle(ctx context.Context, job *engine.Job) error {
	var state string
	if err := d.s.Pool().QueryRow(ctx, `SELECT state FROM pgbus.circuit_breakers WHERE name = $1`, d.breaker).Scan(&state); err != nil {
		return err
	}
	if state == store.BreakerOpen {
		d.whileOpen.Add(1)
	}
	if state == store.BreakerHalfOpen {
		d.mu.Lock()
		d.halfOpen++
		d.maxProbes = max(d.maxProbes, d.halfOpen)
		d.mu.Unlock()
		time.Sleep(50 * time.Millisecond) // a probe takes a while
		defer func() { d.mu.Lock(); d.halfOpen--; d.mu.Unlock() }()
	}
	if !d.healthy.Load() {
		return errors.New("503 service unavailable")
	}
	return nil
}

// Two worker clients, each with its own connections, share one breaker
// through PostgreSQL: the second sees the breaker the first opened, jobs
// meeting it open are snoozed without using attempts, and only one probe
// runs while it is half-open.
func TestCircuitBreakerSharedByTwoWorkers(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 50; qs.RetryBackoff = 50 * time.Millisecond })
	name := uniqueName("bank")
	cfg := &store.BreakerConfig{Name: name, FailureThreshold: 3, CoolOff: 400 * time.Millisecond, MaxCoolOff: 2 * time.Second}
	d := &downstream{s: s, breaker: name}
	clientA := pgtest.NewClient(t, s, q, nil)
	clientA.Handle("call", d.handle, engine.HandlerOptions{Breaker: cfg})
	pgtest.Start(t, clientA)
	for i := range 3 {
		pgtest.Send(t, clientA, q, i, engine.SendOptions{Kind: "call"})
	}
	breakerState := func() string {
		var st string
		_ = s.Pool().QueryRow(context.Background(), `SELECT state FROM pgbus.circuit_breakers WHERE name = $1`, name).Scan(&st)
		return st
	}
	pgtest.Eventually(t, 20*time.Second, "the breaker to open", func() bool { return breakerState() == store.BreakerOpen })

	// A second worker process joins with its own pool; it sees the breaker open.
	s2, err := store.Open(testContext(t), s.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Close)
	clientB := pgtest.NewClient(t, s2, q, nil)
	clientB.Handle("call", d.handle, engine.HandlerOptions{Breaker: cfg})
	pgtest.Start(t, clientB)
	for i := range 20 {
		pgtest.Send(t, clientB, q, 100+i, engine.SendOptions{Kind: "call"})
	}
	pgtest.Eventually(t, time.Minute, "jobs meeting the open breaker to be snoozed", func() bool { return snoozedUnrun(t, s, q) > 0 })
	d.healthy.Store(true)
	pgtest.Eventually(t, 60*time.Second, "every message archived", func() bool { return pgtest.Archived(t, s, q) == 23 })
	if breakerState() != store.BreakerClosed {
		t.Fatalf("breaker %s after recovery, want closed", breakerState())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.maxProbes != 1 {
		t.Fatalf("%d calls ran at once while half-open, want exactly 1 probe", d.maxProbes)
	}
	// Only the calls under way when it opened may find it open: at most
	// the first 3 messages.
	if n := d.whileOpen.Load(); n > 3 {
		t.Fatalf("%d calls found the breaker open; at most the 3 running when it opened may", n)
	}
	// Snoozes used no attempts: no message needed more reads than failures + 1.
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" a WHERE a.read_ct > 1 + (SELECT count(*) FROM pgbus.failures f WHERE f.queue_name = $1 AND f.msg_id = a.msg_id)`, q); n != 0 {
		t.Fatalf("%d messages used attempts while snoozed by the breaker", n)
	}
}

// An error policy that retries longer than its queue gets its own
// attempts: the check at read time, which dead-letters messages whose
// workers crashed on every attempt, does not cut it short at the queue's.
func TestErrorPolicyRetriesPastTheQueuesMax(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 2 })
	c := pgtest.NewClient(t, s, q, nil)
	five := engine.RetryPolicy{MaxRetries: 5, Strategy: store.BackoffExponential, Backoff: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	var calls atomic.Int32
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		calls.Add(1)
		return errTransient
	}, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Is: errTransient, Action: engine.ActionRetry, Retry: &five}}})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "dead-lettered", func() bool { return pgtest.Live(t, s, q) == 0 })
	dead := deadMessages(t, s, q)
	if len(dead) != 1 || dead[0].Block["attempts"] != 5.0 || dead[0].Block["max_retries"] != 5.0 || calls.Load() != 5 {
		t.Fatalf("message %d: %d calls, dead %+v; want 5 calls, then dead after the policy's 5 attempts", id, calls.Load(), dead)
	}
}

// Handlers that name one circuit breaker with different settings stop the
// client at start, naming both: which settings won depended on the order
// of a map. The same settings twice are one breaker.
func TestOneBreakerNameTwoSettings(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	a, b := newQueue(t, s, nil), newQueue(t, s, nil)
	name := "http:" + pgtest.Name("shared")
	newClient := func(second store.BreakerConfig) *engine.Client {
		c := pgtest.NewClient(t, s, a, func(cfg *engine.Config) {
			cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: b, Concurrency: 1})
		})
		first := store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 2 * time.Second, MaxCoolOff: time.Minute}
		noop := func(context.Context, *engine.Job) error { return nil }
		c.HandleQueue(a, noop, engine.HandlerOptions{Breaker: &first})
		c.HandleQueue(b, noop, engine.HandlerOptions{Breaker: &second})
		return c
	}
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	err := newClient(store.BreakerConfig{Name: name, FailureThreshold: 50, CoolOff: time.Minute, MaxCoolOff: time.Hour}).Run(ctx)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "failure threshold 2") || !strings.Contains(err.Error(), "failure threshold 50") {
		t.Fatalf("run with one breaker name, two settings: %v; want ErrInvalid naming both", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1`, name); n != 0 {
		t.Fatalf("the refused client made breaker %s", name)
	}
	same := newClient(store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 2 * time.Second, MaxCoolOff: time.Minute})
	pgtest.Start(t, same)
	pgtest.Eventually(t, 20*time.Second, "the breaker made", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1`, name) == 1
	})
}

// A handler's circuit breaker with settings out of range is refused by
// Validate, as by Run, naming the handler, and the refused Run makes none
// of the breakers of the other handlers: it was refused only as Run made
// the breakers, one by one, unseen by Validate.
func TestBreakerOutOfRangeRefusedBeforeAnyIsMade(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	good := store.BreakerConfig{Name: pgtest.Name("good"), FailureThreshold: 2, CoolOff: time.Second, MaxCoolOff: time.Minute}
	bad := store.BreakerConfig{Name: pgtest.Name("bad"), CoolOff: time.Second, MaxCoolOff: time.Minute}
	noop := func(context.Context, *engine.Job) error { return nil }
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("fine", noop, engine.HandlerOptions{Breaker: &good})
	c.Handle("charge", noop, engine.HandlerOptions{Breaker: &bad})
	// Worded as every other refused option is: "invalid input: " first.
	const says = `invalid input: kind "charge": HandlerOptions.Breaker: circuit breaker "`
	if err := c.Validate(); !errors.Is(err, store.ErrInvalid) || !strings.HasPrefix(err.Error(), says) || !strings.Contains(err.Error(), "failure threshold 0 is out of range") {
		t.Fatalf("Validate = %v; want ErrInvalid saying %q and the threshold", err, says)
	}
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), says) {
		t.Fatalf("Run = %v; want ErrInvalid saying %q", err, says)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = ANY($1)`, []string{good.Name, bad.Name}); n != 0 {
		t.Fatalf("the refused client made %d breakers", n)
	}
}

// An error policy that sets only MaxRetries changes the attempts of its
// errors and keeps the queue's backoff.
func TestErrorPolicyMaxRetriesOnly(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 2 })
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		calls.Add(1)
		return errTransient
	}, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Is: errTransient, Action: engine.ActionRetry, MaxRetries: 4}}})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "dead-lettered", func() bool { return pgtest.Live(t, s, q) == 0 })
	dead := deadMessages(t, s, q)
	if len(dead) != 1 || dead[0].Block["attempts"] != 4.0 || dead[0].Block["max_retries"] != 4.0 || calls.Load() != 4 {
		t.Fatalf("%d calls, dead %+v; want 4 calls, then dead after the policy's 4 attempts", calls.Load(), dead)
	}
	if fs := failures(t, s, q+"_dlq", dead[0].ID); len(fs) != 4 || fs[0].RetryAt.Sub(fs[0].FailedAt) != 100*time.Millisecond {
		t.Fatalf("message %d: failures %+v; want 4, the first retried after the queue's 100ms backoff", id, fs)
	}
}

// Registrations that would dead-letter every message they meet are
// refused by Run, before anything is read, saying what to do.
func TestRunRefusesHandlersThatCannotWork(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	noop := func(context.Context, *engine.Job) error { return nil }
	cases := []struct {
		what     string
		register func(c *engine.Client)
		says     string
	}{
		{"no handlers", func(*engine.Client) {}, "no handlers"},
		{"empty kind", func(c *engine.Client) { c.Handle("", noop) }, "use HandleQueue"},
		{"kind Send refuses", func(c *engine.Client) { c.Handle(strings.Repeat("k", engine.MaxKindBytes+1), noop) },
			fmt.Sprintf("Handle: invalid input: kind is %d bytes; at most %d: a kind names its handler, so give a shorter one", engine.MaxKindBytes+1, engine.MaxKindBytes)},
		{"nil handler", func(c *engine.Client) { c.Handle("k", nil) }, "is nil"},
		{"queue not worked", func(c *engine.Client) { c.HandleQueue(q+"x", noop) }, "does not work"},
		{"kind twice", func(c *engine.Client) { c.Handle("k", noop); c.Handle("k", noop) }, `kind "k" is registered twice`},
		{"queue twice", func(c *engine.Client) { c.HandleQueue(q, noop); c.HandleQueue(q, noop) }, "registered twice with HandleQueue"},
		{"partial retry policy", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{Retry: &engine.RetryPolicy{Backoff: time.Second}})
		}, "start from engine.DefaultRetryPolicy()"},
		{"retry policy of its attempts alone", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{Retry: &engine.RetryPolicy{MaxRetries: 3}})
		}, "HandlerOptions.Retry.BackoffMax is 0, which caps every delay at 0"},
		{"options given twice", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{}, engine.HandlerOptions{Timeout: time.Second})
		}, `kind "k" is registered with 2 HandlerOptions`},
		{"policy retry out of range", func(c *engine.Client) {
			c.HandleQueue(q, noop, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Is: errTransient, Action: engine.ActionRetry, MaxRetries: 5000}}})
		}, "out of range 0..1000"},
		{"timeout given as a bare number", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{Timeout: 30})
		}, "HandlerOptions.Timeout 30ns is shorter than 1ms"},
		{"negative timeout", func(c *engine.Client) {
			c.HandleQueue(q, noop, engine.HandlerOptions{Timeout: -time.Second})
		}, "HandlerOptions.Timeout -1s is shorter than 1ms"},
		{"attempts for a discard", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Is: errTransient, Action: engine.ActionDiscard, MaxRetries: 3}}})
		}, "HandlerOptions.Policies[0] gives Retry or MaxRetries with an action that never retries"},
		{"policy without a matcher", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Action: engine.ActionDeadLetter}}})
		}, "HandlerOptions.Policies[0] matches no error: give it a Class, an Is or a Match"},
		{"policy with an unknown action", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Is: errTransient, Action: engine.Action(9)}}})
		}, "HandlerOptions.Policies[0].Action 9 is not an action"},
		{"jitter past 1", func(c *engine.Client) {
			p := engine.DefaultRetryPolicy()
			p.Jitter = 2
			c.Handle("k", noop, engine.HandlerOptions{Retry: &p})
		}, "HandlerOptions.Retry.Jitter 2 is out of range 0..1"},
		{"jitter not a number", func(c *engine.Client) {
			p := engine.DefaultRetryPolicy()
			p.Jitter = math.NaN()
			c.HandleQueue(q, noop, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Is: errTransient, Retry: &p}}})
		}, "HandlerOptions.Policies[0].Retry.Jitter NaN is out of range 0..1"},
		{"class of a pointer written with its *", func(c *engine.Client) {
			c.Handle("k", noop, engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Class: "*net.OpError", Action: engine.ActionRetry}}})
		}, `HandlerOptions.Policies[0].Class "*net.OpError" never matches: a class names a type without the * of a pointer ("net.OpError")`},
		{"exponential max under its backoff", func(c *engine.Client) {
			p := engine.DefaultRetryPolicy()
			p.BackoffMax = time.Second
			c.Handle("k", noop, engine.HandlerOptions{Retry: &p})
		}, "has backoff 5s and backoff max 1s; the max caps every delay"},
		{"unknown strategy", func(c *engine.Client) {
			p := engine.DefaultRetryPolicy()
			p.Strategy = "linear"
			c.Handle("k", noop, engine.HandlerOptions{Retry: &p})
		}, `Strategy "linear" is not a backoff strategy; use store.BackoffExponential or store.BackoffPolynomial`},
	}
	for _, c := range cases {
		cl := pgtest.NewClient(t, s, q, nil)
		c.register(cl)
		pgtest.Send(t, cl, q, 1, engine.SendOptions{})
		ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
		err := cl.Run(ctx)
		cancel()
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: Run = %v; want ErrInvalid saying %q", c.what, err, c.says)
		}
	}
	if got := pgtest.Live(t, s, q); got != len(cases) {
		t.Fatalf("refused clients touched the queue: %d live, want the %d sent", got, len(cases))
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE read_ct > 0`); n != 0 {
		t.Fatalf("refused clients read %d messages", n)
	}
}

// A handler registered while Run runs would run without Run's checks, and
// the breaker it names would be missing from the list of breakers: Handle
// and HandleQueue panic, saying to register before Run, and leave the
// handlers as they were. Once Run has returned, registering works again.
func TestRegisteringWhileRunningPanics(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	ran := make(chan string, 4)
	c.Handle("first", func(_ context.Context, job *engine.Job) error { ran <- job.Kind; return nil })
	stop := pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "first"})
	<-ran // Run has started
	breaker := &store.BreakerConfig{Name: uniqueName("late"), FailureThreshold: 1, CoolOff: time.Second, MaxCoolOff: time.Second}
	late := func(context.Context, *engine.Job) error { return nil }
	for name, register := range map[string]func(){
		"Handle":      func() { c.Handle("second", late, engine.HandlerOptions{Breaker: breaker}) },
		"HandleQueue": func() { c.HandleQueue(q, late, engine.HandlerOptions{Breaker: breaker}) },
		"Handle twice": func() {
			c.Handle("first", func(_ context.Context, job *engine.Job) error { ran <- "replaced"; return nil })
		},
	} {
		if got := panicOf(register); !strings.Contains(got, "register every handler before Run") {
			t.Errorf("%s while running: panic %q; want one saying to register every handler before Run", name, got)
		}
	}
	pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "first"})
	if got := <-ran; got != "first" {
		t.Fatalf("after the refused registrations, kind first ran handler %q; want the one registered before Run", got)
	}
	stop()
	if got := panicOf(func() { c.Handle("second", late) }); got != "" {
		t.Fatalf("Handle after Run returned: panic %q; want none", got)
	}
}

// panicOf calls fn and returns what it panicked with, "" when it did not.
func panicOf(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return ""
}

// The error wrappers keep a nil error nil, as Go's wrappers do: a handler
// can return engine.NonRetryable(validate(in)).
func TestWrappersOfNil(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"NonRetryable": engine.NonRetryable(nil),
		"Discard":      engine.Discard(nil),
		"RetryAfter":   engine.RetryAfter(time.Second, nil),
	} {
		if err != nil {
			t.Errorf("%s(nil) = %v; want nil", name, err)
		}
	}
	if err := engine.NonRetryable(errTransient); !errors.Is(err, errTransient) {
		t.Errorf("NonRetryable(err) = %v; want it wrapping err", err)
	}
}

// A Client's sends follow a queue dropped and made again with levels (its
// layout was read once and kept), and never write into a DLQ.
func TestSendFollowsAQueueMadeAgain(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	if _, err := c.Send(ctx, q, 1, engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePriorityQueue(ctx, q, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, q, 1, engine.SendOptions{Priority: 1}); err != nil {
		t.Fatalf("send at priority 1 to %s made again with 3 levels: %v", q, err)
	}
	if got := pgtest.Live(t, s, q+"_p1"); got != 1 {
		t.Fatalf("level 1 holds %d messages, want the 1 sent", got)
	}
	if _, err := c.Send(ctx, q+"_dlq", 1, engine.SendOptions{}); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "send to \""+q+"\" instead") {
		t.Fatalf("send to %s_dlq: %v; want ErrInvalid naming the queue to send to", q, err)
	}
	if got := pgtest.Live(t, s, q+"_dlq"); got != 0 {
		t.Fatalf("the DLQ holds %d messages, want none", got)
	}
}

// NewClient without a store says so, instead of a client whose first call
// panics.
func TestNewClientWithoutStore(t *testing.T) {
	t.Parallel()
	c, err := engine.NewClient(nil, engine.Config{Queues: []engine.QueueConfig{{Name: "q", Concurrency: 1}}})
	if c != nil || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "store.Open") {
		t.Fatalf("NewClient(nil) = %v, %v; want ErrInvalid saying to open a store", c, err)
	}
}

// An interval that paces a loop, given as a bare number (StatsFlush: 1,
// one nanosecond, meant as a second), is refused, naming the field, rather
// than querying the database without pause; MinInterval itself is taken.
// PollInterval, whose least is MinPollInterval, is tested with the other
// durations of their own least (TestNewClientRefusesDurationsBelowTheirLeast).
func TestNewClientRefusesNanosecondIntervals(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := uniqueName("q")
	for field, set := range map[string]func(*engine.Config, time.Duration){
		"VisibilityHeartbeat": func(c *engine.Config, d time.Duration) { c.VisibilityHeartbeat = d },
		"ProcessHeartbeat":    func(c *engine.Config, d time.Duration) { c.ProcessHeartbeat = d },
		"SettingsRefresh":     func(c *engine.Config, d time.Duration) { c.SettingsRefresh = d },
		"StatsFlush":          func(c *engine.Config, d time.Duration) { c.StatsFlush = d },
		"RetentionInterval":   func(c *engine.Config, d time.Duration) { c.RetentionInterval = d },
	} {
		cfg := engine.Config{Queues: []engine.QueueConfig{{Name: q}}}
		set(&cfg, 1)
		c, err := engine.NewClient(s, cfg)
		if want := "Config." + field + " 1ns is shorter than 1ms"; c != nil || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: 1: NewClient made a client: %t, err %v; want ErrInvalid saying %q", field, c != nil, err, want)
		}
		set(&cfg, engine.MinInterval)
		if c, err := engine.NewClient(s, cfg); c == nil || err != nil {
			t.Errorf("%s: %s: NewClient made a client: %t, err %v; want a client", field, engine.MinInterval, c != nil, err)
		}
	}
}

// A negative duration where none means anything is refused, naming the
// field: the default took its place without a word (a DrainTimeout of -1s
// waited 30s). RetentionInterval's negative, never, is taken.
func TestNewClientRefusesNegativeDurations(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := uniqueName("q")
	for field, set := range map[string]func(*engine.Config){
		"PollInterval":        func(c *engine.Config) { c.PollInterval = -time.Second },
		"DrainTimeout":        func(c *engine.Config) { c.DrainTimeout = -time.Second },
		"HandlerGrace":        func(c *engine.Config) { c.HandlerGrace = -time.Second },
		"VisibilityHeartbeat": func(c *engine.Config) { c.VisibilityHeartbeat = -time.Second },
		"ProcessHeartbeat":    func(c *engine.Config) { c.ProcessHeartbeat = -time.Second },
		"SettingsRefresh":     func(c *engine.Config) { c.SettingsRefresh = -time.Second },
		"StatsFlush":          func(c *engine.Config) { c.StatsFlush = -time.Second },
		"DatabaseCallTimeout": func(c *engine.Config) { c.DatabaseCallTimeout = -time.Second },
	} {
		cfg := engine.Config{Queues: []engine.QueueConfig{{Name: q}}}
		set(&cfg)
		c, err := engine.NewClient(s, cfg)
		if want := "Config." + field + " -1s is negative"; c != nil || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: NewClient made a client: %t, err %v; want ErrInvalid saying %q", field, c != nil, err, want)
		}
	}
	if c, err := engine.NewClient(s, engine.Config{Queues: []engine.QueueConfig{{Name: q}}, RetentionInterval: -1}); c == nil || err != nil {
		t.Errorf("RetentionInterval -1 (never): %v", err)
	}
}

// A client keeps its own copy of Config.Queues: the caller's slice keeps
// the values it gave (the default concurrency was written into it), and
// reused for another client afterwards, it does not change the queues
// this one works.
func TestClientKeepsItsOwnQueues(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	queues := []engine.QueueConfig{{Name: q}}
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Queues = queues })
	if queues[0].Concurrency != 0 {
		t.Errorf("NewClient wrote concurrency %d into the caller's Config.Queues", queues[0].Concurrency)
	}
	queues[0].Name = uniqueName("other") // the slice reused for another client
	ran := make(chan int64, 1)
	c.HandleQueue(q, func(_ context.Context, job *engine.Job) error { ran <- job.ID; return nil })
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Start(t, c)
	select {
	case got := <-ran:
		if got != id {
			t.Fatalf("ran message %d, want %d", got, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the client did not work queue %s after the caller reused its Config.Queues", q)
	}
}

// A registration keeps the retry policy it was given: the caller changing
// the policy afterwards, to register another kind with it, changes only
// the other kind's.
func TestHandleKeepsItsOwnRetryPolicy(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	seen := make(chan int, 2)
	record := func(_ context.Context, job *engine.Job) error { seen <- job.MaxRetries; return nil }
	p := engine.DefaultRetryPolicy()
	p.MaxRetries = 1
	c.Handle("once", record, engine.HandlerOptions{Retry: &p})
	p.MaxRetries = 7
	c.Handle("often", record, engine.HandlerOptions{Retry: &p})
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "once"})
	pgtest.Start(t, c)
	select {
	case got := <-seen:
		if got != 1 {
			t.Fatalf("kind once ran with MaxRetries %d; want the 1 it was registered with", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not run")
	}
}

// A nil context is refused by Run and Send, saying what to pass, rather
// than panicking on a nil dereference in the driver; nothing is sent.
func TestNilContextRefused(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	var sent atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{idSender{id: &sent}} })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	var none context.Context
	call := func(what string, f func() error) error {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s with a nil context panicked: %v", what, r)
			}
		}()
		return f()
	}
	if err := call("Run", func() error { return c.Run(none) }); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "context.WithCancel(context.Background())") {
		t.Errorf("Run(nil) = %v; want ErrInvalid saying what to pass", err)
	}
	if err := call("Send", func() error { _, err := c.Send(none, q, 1, engine.SendOptions{}); return err }); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "context.Background()") {
		t.Errorf("Send(nil) = %v; want ErrInvalid saying what to pass", err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("%d messages sent", n)
	}
}

// A stop while Run starts is a stop like any other: nil, not the error of
// the start's query the stop cut off.
func TestRunStoppedWhileStarting(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatalf("Run on a stopped context = %v; want nil", err)
	}
}

// ErrorClass names what a handler returned; nothing returned has no class.
func TestErrorClassOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("boom"), "error"},
		{fmt.Errorf("charge: %w", quotaError{}), "engine_test.quotaError"},
		{fmt.Errorf("wrapped: %w", classed{"http.503"}), "http.503"},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), "context.DeadlineExceeded"},
		{engine.NonRetryable(errors.New("bad input")), "error"},
		{engine.Nack(time.Second, "later"), engine.ClassNack},
		{engine.Snooze(time.Minute), ""}, // no failure: nothing to class
	} {
		if got := engine.ErrorClass(c.err); got != c.want {
			t.Errorf("ErrorClass(%v) = %q; want %q", c.err, got, c.want)
		}
	}
}

// The polynomial strategy has no base backoff: a kind's policy with a max
// under the default backoff is its own bound, not a mistake, and caps the
// polynomial's delay: 3s after a first failure, retried after 2s.
func TestPolynomialPolicyMaxUnderTheBackoff(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	p := engine.DefaultRetryPolicy()
	p.Strategy, p.BackoffMax = store.BackoffPolynomial, 2*time.Second
	var calls atomic.Int32
	c.Handle("k", func(context.Context, *engine.Job) error {
		if calls.Add(1) == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}, engine.HandlerOptions{Retry: &p})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "k"})
	pgtest.Eventually(t, 20*time.Second, "the message archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	fs := failures(t, s, q, id)
	if len(fs) != 1 || fs[0].RetryAt == nil {
		t.Fatalf("failures %+v; want one with a retry time", fs)
	}
	if d := fs[0].RetryAt.Sub(fs[0].FailedAt); d != p.BackoffMax {
		t.Fatalf("retried %s after the failure; want the policy's max of %s, under the polynomial's 3s", d, p.BackoffMax)
	}
}

// Handlers that name one breaker with different settings are refused in
// the same words whatever the order of the maps they are registered in:
// the queues and kinds in the order of their names.
func TestBreakerConflictWordedInOneOrder(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	noop := func(context.Context, *engine.Job) error { return nil }
	c := pgtest.NewClient(t, s, "bq_alpha", func(cfg *engine.Config) {
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: "bq_beta", Concurrency: 1}, engine.QueueConfig{Name: "bq_gamma", Concurrency: 1})
	})
	loose := store.BreakerConfig{Name: "shared", FailureThreshold: 5, CoolOff: time.Second, MaxCoolOff: time.Minute}
	tight := loose
	tight.FailureThreshold = 2
	c.HandleQueue("bq_alpha", noop, engine.HandlerOptions{Breaker: &loose})
	c.HandleQueue("bq_beta", noop, engine.HandlerOptions{Breaker: &loose})
	c.HandleQueue("bq_gamma", noop, engine.HandlerOptions{Breaker: &tight})
	const want = `(failure threshold 5, cool-off 1s up to 1m0s for queue bq_alpha, queue bq_beta, failure threshold 2, cool-off 1s up to 1m0s for queue bq_gamma)`
	for range 20 {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Validate = %v; want it to say %s", err, want)
		}
	}
}
