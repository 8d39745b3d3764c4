package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// failN returns a handler that fails its first n calls, then succeeds.
func failN(n int32, calls *atomic.Int32) engine.HandlerFunc {
	return func(ctx context.Context, job *engine.Job) error {
		if calls.Add(1) <= n {
			return errors.New("downstream said 503")
		}
		return nil
	}
}

// The recorded retry times follow the formula exactly with the jitter
// source fixed: 100ms, 200ms, 400ms, 800ms.
func TestFailFourTimesThenSucceed(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, failN(4, &calls))
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	fs := failures(t, s, q, id)
	if len(fs) != 4 {
		t.Fatalf("recorded %d failures, want 4: %+v", len(fs), fs)
	}
	for i, f := range fs {
		want := 100 * time.Millisecond << i
		if f.Attempt != i+1 || f.RetryAt == nil {
			t.Fatalf("failure %d: attempt %d retry_at %v", i, f.Attempt, f.RetryAt)
		}
		if got := f.RetryAt.Sub(f.FailedAt); got != want {
			t.Errorf("attempt %d: retry scheduled %s after the failure, want %s", f.Attempt, got, want)
		}
		if i > 0 && fs[i].FailedAt.Before(*fs[i-1].RetryAt) {
			t.Errorf("attempt %d ran at %s, before its retry time %s", f.Attempt, fs[i].FailedAt, *fs[i-1].RetryAt)
		}
	}
	if n := calls.Load(); n != 5 {
		t.Fatalf("handler ran %d times, want 5", n)
	}
	if readCt := pgtest.Int(t, s, `SELECT read_ct FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id); readCt != 5 {
		t.Fatalf("archived read_ct = %d, want 5", readCt)
	}
	if pgtest.Live(t, s, q) != 0 || len(deadMessages(t, s, q)) != 0 {
		t.Fatal("message left in the queue or the DLQ")
	}
}

// With real jitter, each delay stays within the jitter band of the formula.
func TestRetryDelaysWithinJitterBand(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.RetryBackoffJitter = 0.5 })
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Rand = nil })
	var calls atomic.Int32
	c.HandleQueue(q, failN(3, &calls))
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	for i, f := range failures(t, s, q, id) {
		base := 100 * time.Millisecond << i
		got := f.RetryAt.Sub(f.FailedAt)
		if got < base/2 || got > base*3/2 {
			t.Errorf("attempt %d: delay %s outside [%s, %s]", f.Attempt, got, base/2, base*3/2)
		}
	}
}

func TestFailFiveTimesDeadLettersWithFullBlock(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.Handle("charge", failN(100, &calls))
	pgtest.Start(t, c)
	before := time.Now()
	id := pgtest.Send(t, c, q, map[string]string{"card": "x"}, engine.SendOptions{Kind: "charge", Headers: map[string]any{"trace": "abc"}})
	pgtest.Eventually(t, 30*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	d := deadMessages(t, s, q)[0]
	b := d.Block
	wantStr := map[string]string{
		"reason": store.ReasonMaxRetriesExceeded, "source": "worker", "source_queue": q,
		"error_class": "error", "error_message": "downstream said 503",
	}
	for k, v := range wantStr {
		if b[k] != v {
			t.Errorf("block[%s] = %v, want %q", k, b[k], v)
		}
	}
	wantNum := map[string]float64{"version": 1, "source_msg_id": float64(id), "attempts": 5, "max_retries": 5, "error_attempt": 5}
	for k, v := range wantNum {
		if b[k] != v {
			t.Errorf("block[%s] = %v, want %v", k, b[k], v)
		}
	}
	for _, k := range []string{"source_enqueued_at", "dead_lettered_at", "error_recorded_at"} {
		ts, ok := b[k].(string)
		parsed, err := time.Parse(time.RFC3339Nano, ts)
		if !ok || err != nil || parsed.Before(before.Add(-time.Minute)) || parsed.After(time.Now().Add(time.Minute)) {
			t.Errorf("block[%s] = %v, want a recent RFC 3339 time (%v)", k, b[k], err)
		}
	}
	if ts, _ := b["dead_lettered_at"].(string); !strings.HasSuffix(ts, "Z") {
		t.Errorf("dead_lettered_at %q is not UTC", ts)
	}
	if _, ok := b["retries_from_dlq"]; ok {
		t.Errorf("retries_from_dlq present on a first death: %v", b["retries_from_dlq"])
	}
	if string(d.Headers["trace"]) != `"abc"` || string(d.Headers[store.HeaderKind]) != `"charge"` {
		t.Errorf("original headers not kept: %v", d.Headers)
	}
	if string(d.Payload) != `{"card": "x"}` {
		t.Errorf("payload = %s", d.Payload)
	}
	if calls.Load() != 5 || pgtest.Live(t, s, q) != 0 || pgtest.Archived(t, s, q) != 0 {
		t.Fatalf("calls=%d live=%d archived=%d; want 5, 0, 0", calls.Load(), pgtest.Live(t, s, q), pgtest.Archived(t, s, q))
	}
	if n := len(failures(t, s, q+"_dlq", d.ID)); n != 5 {
		t.Fatalf("history follows the message into the DLQ: %d failures there, want 5", n)
	}
}

func TestNonRetryableDeadLettersOnFirstAttempt(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		calls.Add(1)
		return engine.NonRetryable(errors.New("card number is malformed"))
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	b := deadMessages(t, s, q)[0].Block
	if b["reason"] != store.ReasonNonRetryable || b["attempts"] != 1.0 || b["error_message"] != "card number is malformed" {
		t.Fatalf("block = %v", b)
	}
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", calls.Load())
	}
}

func TestRetryAfterOverridesBackoff(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.RetryBackoff = 10 * time.Second; qs.RetryBackoffMax = time.Minute })
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		if calls.Add(1) == 1 {
			return engine.RetryAfter(300*time.Millisecond, errors.New("429 too many requests"))
		}
		return nil
	})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	fs := failures(t, s, q, id)
	if len(fs) != 1 || fs[0].RetryAt.Sub(fs[0].FailedAt) != 300*time.Millisecond {
		t.Fatalf("failures = %+v, want one retried after exactly 300ms", fs)
	}
}

func TestNackUsesExplicitDelayAndReason(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		if calls.Add(1) == 1 {
			return engine.Nack(250*time.Millisecond, "inventory not synced yet")
		}
		return nil
	})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	fs := failures(t, s, q, id)
	if len(fs) != 1 || fs[0].Class != engine.ClassNack || fs[0].Message != "inventory not synced yet" || fs[0].RetryAt.Sub(fs[0].FailedAt) != 250*time.Millisecond {
		t.Fatalf("failures = %+v", fs)
	}
}

// A Nack with no delay retries at once, whatever the queue's backoff: its
// delay is explicit, 0 included.
func TestNackWithoutDelayRetriesAtOnce(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.RetryBackoff = time.Hour; qs.RetryBackoffMax = time.Hour })
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		if calls.Add(1) == 1 {
			return engine.Nack(0, "not yet")
		}
		return nil
	})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	fs := failures(t, s, q, id)
	if len(fs) != 1 || fs[0].RetryAt.Sub(fs[0].FailedAt) != 0 {
		t.Fatalf("failures = %+v, want one retried at once", fs)
	}
}

func TestSnoozeUsesNoAttempt(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 1 })
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	attempts := make(chan int, 10)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		attempts <- job.Attempt
		if calls.Add(1) <= 3 {
			return engine.Snooze(50 * time.Millisecond)
		}
		return nil
	})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	close(attempts)
	for a := range attempts {
		if a != 1 {
			t.Fatalf("a snoozed message ran as attempt %d; snoozes must not use attempts", a)
		}
	}
	if calls.Load() != 4 || len(failures(t, s, q, id)) != 0 {
		t.Fatalf("calls=%d failures=%d; want 4 and none", calls.Load(), len(failures(t, s, q, id)))
	}
	if n := pgtest.Int(t, s, `SELECT read_ct FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id); n != 1 {
		t.Fatalf("archived read_ct = %d, want 1", n)
	}
}

// Job.Snoozes counts the handler's snoozes, which Attempt cannot (a snooze
// gives its attempt back): a handler bounding its wait with it stops. A
// value another client wrote that is no count reads as 0, and a DLQ retry
// starts the count again, as it does the attempts.
func TestSnoozesAreCounted(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	type seen struct{ attempt, snoozes int }
	var mu sync.Mutex
	runs := map[int][]seen{}
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		var n int
		if err := job.Decode(&n); err != nil {
			return err
		}
		mu.Lock()
		runs[n] = append(runs[n], seen{job.Attempt, job.Snoozes})
		first := len(runs[n]) == 4
		mu.Unlock()
		if job.Snoozes < 3 {
			return engine.Snooze(time.Millisecond)
		}
		if n == 1 && first {
			return engine.NonRetryable(errors.New("waited long enough"))
		}
		return nil
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	// Written as another client would: a send refuses pgbus_ headers.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (vt, message, headers) VALUES (now(), '2', '{"`+store.HeaderSnoozes+`": "many"}')`); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 20*time.Second, "one dead, one archived", func() bool {
		return len(deadMessages(t, s, q)) == 1 && pgtest.Archived(t, s, q) == 1
	})
	d := deadMessages(t, s, q)[0]
	if rep, err := s.RetryDead(ctx, store.DLQName(q), []int64{d.ID}, store.RetryOptions{}); err != nil || rep.Retried != 1 {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	pgtest.Eventually(t, 20*time.Second, "the retried message archived", func() bool { return pgtest.Archived(t, s, q) == 2 })
	mu.Lock()
	defer mu.Unlock()
	counted := []seen{{1, 0}, {1, 1}, {1, 2}, {1, 3}}
	want := map[int][]seen{1: append(counted, counted...), 2: counted}
	for n, w := range want {
		if !slices.Equal(runs[n], w) {
			t.Errorf("message %d ran as (attempt, snoozes) %v; want %v", n, runs[n], w)
		}
	}
}

func TestDeadlinePassedDeadLettersWithoutRunning(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { calls.Add(1); return nil })
	pgtest.Start(t, c)
	// Send refuses a deadline already passed: this one passed on the way,
	// written as another sender, NewMessage and the store, write it.
	expired, err := engine.NewMessage(1, engine.SendOptions{Deadline: time.Now().Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(testContext(t), q, expired); err != nil {
		t.Fatal(err)
	}
	fresh := pgtest.Send(t, c, q, 2, engine.SendOptions{Deadline: time.Now().Add(time.Hour)})
	pgtest.Eventually(t, 20*time.Second, "one dead, one archived", func() bool {
		return len(deadMessages(t, s, q)) == 1 && pgtest.Archived(t, s, q) == 1
	})
	b := deadMessages(t, s, q)[0].Block
	if b["reason"] != store.ReasonDeadlineExceeded {
		t.Fatalf("reason = %v, want deadline_exceeded", b["reason"])
	}
	if _, ok := b["error_class"]; ok {
		t.Fatalf("a message that never ran has error keys: %v", b)
	}
	if calls.Load() != 1 || pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1`, fresh) != 1 {
		t.Fatalf("calls = %d; want only the message within its deadline to run", calls.Load())
	}
}

// A pgbus_deadline another client wrote is kept in the forms RFC 3339
// allows (lower-case t and z, a space for the T, as PostgreSQL writes a
// time); one that is no time at all lets the message run, as before, but
// the log names it at each attempt: it ran past its deadline without a
// word.
func TestDeadlineHeadersOfOtherClients(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	var logs lockedBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	var ran sync.Map
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { ran.Store(job.ID, true); return nil })
	pgtest.Start(t, c)
	send := func(deadline string) int64 {
		t.Helper()
		id, err := s.Send(testContext(t), q, store.NewMessage{Payload: json.RawMessage(`1`), Headers: json.RawMessage(`{"` + store.HeaderDeadline + `": ` + deadline + `}`)})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	passed := map[int64]string{}
	for _, d := range []string{`"2020-01-01t00:00:00z"`, `"2020-01-01 00:00:00Z"`, `"2020-01-01 00:00:00.5+00"`, `"2020-01-01T05:30:00+05:30"`} {
		passed[send(d)] = d
	}
	unreadable := map[int64]string{}
	for _, d := range []string{`"garbage"`, `1`, `"2020-01-01"`} {
		unreadable[send(d)] = d
	}
	none := []int64{send(`""`), send(`null`)}
	pgtest.Eventually(t, 20*time.Second, "every message settled", func() bool { return pgtest.Live(t, s, q) == 0 })
	dead := map[int64]bool{}
	for _, m := range deadMessages(t, s, q) {
		if m.Block["reason"] != store.ReasonDeadlineExceeded {
			t.Errorf("dead message %d: reason %v, want deadline_exceeded", m.ID, m.Block["reason"])
		}
		dead[int64(m.Block["source_msg_id"].(float64))] = true
	}
	for id, d := range passed {
		if _, did := ran.Load(id); did || !dead[id] {
			t.Errorf("deadline %s: ran %v, dead-lettered %v; want dead-lettered unrun", d, did, dead[id])
		}
	}
	for id, d := range unreadable {
		if _, did := ran.Load(id); !did {
			t.Errorf("deadline %s: did not run", d)
		}
		if !strings.Contains(logs.String(), fmt.Sprintf("msg_id=%d pgbus_deadline=", id)) {
			t.Errorf("deadline %s: no warning naming message %d:\n%s", d, id, logs.String())
		}
	}
	for _, id := range none {
		if _, did := ran.Load(id); !did || strings.Contains(logs.String(), fmt.Sprintf("msg_id=%d ", id)) {
			t.Errorf("message %d without a deadline: ran %v, logs:\n%s", id, did, logs.String())
		}
	}
}

func TestDiscardArchivesWithHeaderAndFailure(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		return engine.Discard(errors.New("user deleted their account"))
	})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1 AND headers->'pgbus_discarded' = 'true'`, id); n != 1 {
		t.Fatal("archived message lacks pgbus_discarded: true")
	}
	fs := failures(t, s, q, id)
	if len(fs) != 1 || fs[0].Message != "user deleted their account" || fs[0].RetryAt != nil {
		t.Fatalf("failures = %+v", fs)
	}
	if len(deadMessages(t, s, q)) != 0 {
		t.Fatal("a discarded message reached the DLQ")
	}
}

// A panic is a programming error: dead-lettered at once, with the
// goroutine stack in the history and its first lines in the block.
func TestPanicDeadLettersWithStack(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		calls.Add(1)
		var m map[string]int
		m["boom"] = 1 // nil map write panics
		return nil
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	d := deadMessages(t, s, q)[0]
	if d.Block["reason"] != store.ReasonNonRetryable || d.Block["error_class"] != engine.ClassPanic || calls.Load() != 1 {
		t.Fatalf("block = %v, calls = %d", d.Block, calls.Load())
	}
	trace, _ := d.Block["backtrace"].(string)
	if n := strings.Count(trace, "\n") + 1; trace == "" || n > store.BlockBacktraceMaxLines || len(trace) > store.BlockBacktraceMax {
		t.Fatalf("block backtrace has %d lines, %d bytes:\n%s", n, len(trace), trace)
	}
	// The lines the block keeps start where the handler panicked, not in
	// the runtime's or the engine's recovery.
	if !strings.Contains(trace, "TestPanicDeadLettersWithStack") || strings.Contains(trace, "debug.Stack") || strings.Contains(trace, "panic(") {
		t.Fatalf("block backtrace does not start at the handler's panic:\n%s", trace)
	}
	fs := failures(t, s, q+"_dlq", d.ID)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "nil map") {
		t.Fatalf("failures = %+v", fs)
	}
	if !strings.Contains(fs[0].Trace, "goroutine") || !strings.Contains(fs[0].Trace, "TestPanicDeadLettersWithStack") {
		t.Fatalf("history backtrace does not hold the goroutine stack:\n%s", fs[0].Trace)
	}
}

// A handler that names panics in its policies (Class engine.ClassPanic)
// has them retried as it asks; a catch-all Match, written for the errors
// a handler returns, does not take a panic for one of them: it is still
// dead-lettered at once.
func TestPanicPolicyRetriesPanics(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var retried, caught atomic.Int32
	flaky := func(calls *atomic.Int32) engine.HandlerFunc {
		return func(context.Context, *engine.Job) error {
			if calls.Add(1) == 1 {
				var m map[string]int
				m["boom"] = 1
			}
			return nil
		}
	}
	c.Handle("retried", flaky(&retried), engine.HandlerOptions{Policies: []engine.ErrorPolicy{
		{Match: func(error) bool { return false }, Action: engine.ActionDeadLetter},
		{Class: engine.ClassPanic, Action: engine.ActionRetry, MaxRetries: 3}}})
	c.Handle("caught", flaky(&caught), engine.HandlerOptions{Policies: []engine.ErrorPolicy{
		{Match: func(error) bool { return true }, Action: engine.ActionRetry, MaxRetries: 3}}})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "retried"})
	pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "caught"})
	pgtest.Eventually(t, 20*time.Second, "one archived, one dead", func() bool {
		return pgtest.Archived(t, s, q) == 1 && len(deadMessages(t, s, q)) == 1
	})
	if retried.Load() != 2 || pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id) != 1 {
		t.Fatalf("the kind whose policy names panics ran %d times; want 2, archived after its retry", retried.Load())
	}
	if fs := failures(t, s, q, id); len(fs) != 1 || fs[0].Class != engine.ClassPanic {
		t.Fatalf("failures of the retried panic: %+v; want the panic recorded", fs)
	}
	if b := deadMessages(t, s, q)[0].Block; b["reason"] != store.ReasonNonRetryable || b["error_class"] != engine.ClassPanic || caught.Load() != 1 {
		t.Fatalf("the kind with a catch-all Match: block %v after %d runs; want dead-lettered at once as a panic", b, caught.Load())
	}
}

// lookupError is an error type whose Error reads its fields, as most do.
type lookupError struct{ key string }

func (e *lookupError) Error() string { return "no such key " + e.key }

// An error whose methods panic, as a nil *lookupError returned as an error
// does, is the handler's programming error like a panic in it: its
// message is dead-lettered at once as a panic, naming the error's type,
// and the worker and its other jobs go on.
func TestPanickingErrorDeadLettersLikeAPanic(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("typed_nil", func(context.Context, *engine.Job) error {
		var missing *lookupError
		return missing
	})
	c.Handle("policy", func(context.Context, *engine.Job) error { return errTransient }, engine.HandlerOptions{
		Policies: []engine.ErrorPolicy{{Match: func(error) bool { panic("a matcher with a bug") }, Action: engine.ActionDiscard}},
	})
	c.Handle("fine", func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "typed_nil"})
	pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "policy"})
	pgtest.Send(t, c, q, 3, engine.SendOptions{Kind: "fine"})
	pgtest.Eventually(t, 30*time.Second, "two dead, one archived", func() bool {
		return len(deadMessages(t, s, q)) == 2 && pgtest.Archived(t, s, q) == 1
	})
	for _, d := range deadMessages(t, s, q) {
		msg, _ := d.Block["error_message"].(string)
		if d.Block["reason"] != store.ReasonNonRetryable || d.Block["error_class"] != engine.ClassPanic || !strings.Contains(msg, "reading the error the handler returned") {
			t.Errorf("dead message %d: block %v; want a non-retryable panic saying the handler's error panicked", d.ID, d.Block)
		}
	}
}

// A handler that ends its goroutine with runtime.Goexit, as testing's
// FailNow does, neither returns nor panics: its attempt fails at once as a
// programming error saying so, not after its timeout as one that ignored
// its context.
func TestGoexitDeadLettersLikeAPanic(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		runtime.Goexit()
		return nil
	}, engine.HandlerOptions{Timeout: time.Hour})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	d := deadMessages(t, s, q)[0]
	if msg, _ := d.Block["error_message"].(string); d.Block["error_class"] != engine.ClassPanic || !strings.Contains(msg, "runtime.Goexit") {
		t.Fatalf("block %v; want a panic naming runtime.Goexit", d.Block)
	}
}

func TestUnknownKindDeadLettersAsNonRetryable(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("known", func(ctx context.Context, job *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "mystery"})
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	b := deadMessages(t, s, q)[0].Block
	msg, _ := b["error_message"].(string)
	if b["reason"] != store.ReasonNonRetryable || b["error_class"] != engine.ClassUnknownKind || !strings.Contains(msg, `"mystery"`) {
		t.Fatalf("block = %v", b)
	}
}

func TestUndecodablePayloadDeadLetters(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		var in struct{ Amount int }
		return job.Decode(&in)
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, map[string]string{"Amount": "twelve"}, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	b := deadMessages(t, s, q)[0].Block
	if b["reason"] != store.ReasonNonRetryable || b["error_class"] != engine.ClassDecode || b["attempts"] != 1.0 {
		t.Fatalf("block = %v", b)
	}
}

// Decode given no non-nil pointer blames the handler, as encoding/json's
// InvalidUnmarshalError does, not the payload: it was a decode error of
// the payload, and dead-lettered under the class of bad input. A worker
// still dead-letters the message at once, as a programming error (a
// panic) does, under a class of its own that says the handler is at
// fault.
func TestDecodeIntoNoPointerBlamesTheHandler(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	type order struct{ Amount int }
	targets := map[string]any{"value": order{}, "nil": nil, "nil pointer": (*order)(nil)}
	var mu sync.Mutex
	unwrapped := map[string]bool{}
	for kind, target := range targets {
		c.Handle(kind, func(_ context.Context, job *engine.Job) error {
			err := job.Decode(target)
			var iue *json.InvalidUnmarshalError
			mu.Lock()
			unwrapped[kind] = errors.As(err, &iue)
			mu.Unlock()
			return err
		})
	}
	pgtest.Start(t, c)
	for kind := range targets {
		pgtest.Send(t, c, q, map[string]int{"Amount": 12}, engine.SendOptions{Kind: kind})
	}
	pgtest.Eventually(t, 20*time.Second, "every message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == len(targets) })
	for _, d := range deadMessages(t, s, q) {
		b := d.Block
		msg, _ := b["error_message"].(string)
		if b["reason"] != store.ReasonNonRetryable || b["error_class"] != engine.ClassDecodeTarget || b["attempts"] != 1.0 ||
			!strings.Contains(msg, "Job.Decode needs a non-nil pointer") || !strings.Contains(msg, "not its payload") {
			t.Errorf("kind %s: block = %v; want %s, class %s after one attempt, saying the handler is at fault", d.Headers[store.HeaderKind], b, store.ReasonNonRetryable, engine.ClassDecodeTarget)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for kind := range targets {
		if !unwrapped[kind] {
			t.Errorf("kind %s: Decode's error does not unwrap to a *json.InvalidUnmarshalError", kind)
		}
	}
}

func TestHandlerTimeouts(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 1 })
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.HandlerGrace = 100 * time.Millisecond
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	block := make(chan struct{})
	c.Handle("polite", func(ctx context.Context, job *engine.Job) error {
		<-ctx.Done()
		return ctx.Err()
	}, engine.HandlerOptions{Timeout: 200 * time.Millisecond})
	c.Handle("stubborn", func(ctx context.Context, job *engine.Job) error {
		<-block // ignores its context
		return errors.New("gave up, late")
	}, engine.HandlerOptions{Timeout: 200 * time.Millisecond})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "polite"})
	pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "stubborn"})
	awaitGivenUp(t, &logs, "the stubborn handler given up")
	close(block) // its failure is written once it returns
	pgtest.Eventually(t, 20*time.Second, "both in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 2 })
	classes := map[string]bool{}
	for _, d := range deadMessages(t, s, q) {
		classes[d.Block["error_class"].(string)] = true
	}
	if !classes["context.DeadlineExceeded"] || !classes[engine.ClassHandlerTimeout] {
		t.Fatalf("error classes = %v, want context.DeadlineExceeded and %s", classes, engine.ClassHandlerTimeout)
	}
}

// A handler timeout as long as a Duration goes, as "no timeout" is
// written, lets the handler run: added to the grace it wrapped to a
// negative wait, and every attempt was failed at once as a handler that
// ignored its context, here dead-lettering a job that succeeds.
func TestTimeoutAsLongAsADurationGoes(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 1 })
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.Handle("long", func(ctx context.Context, job *engine.Job) error {
		calls.Add(1)
		time.Sleep(300 * time.Millisecond) // a handler that takes a while
		return nil
	}, engine.HandlerOptions{Timeout: math.MaxInt64})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "long"})
	pgtest.Eventually(t, 20*time.Second, "the message settled", func() bool { return pgtest.Live(t, s, q) == 0 })
	if dead := deadMessages(t, s, q); len(dead) != 0 {
		t.Fatalf("dead-lettered: %v", dead[0].Block)
	}
	if got := pgtest.Archived(t, s, q); got != 1 || calls.Load() != 1 {
		t.Fatalf("archived %d after %d calls; want 1 after 1", got, calls.Load())
	}
}

func TestHugeErrorMessageTruncatedInBlockKeptInHistory(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	huge := strings.Repeat("é", 100_000)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		return engine.NonRetryable(errors.New(huge))
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	d := deadMessages(t, s, q)[0]
	msg := d.Block["error_message"].(string)
	if n := len([]rune(msg)); n != store.BlockErrorMessageMax {
		t.Fatalf("block error_message has %d characters, want %d", n, store.BlockErrorMessageMax)
	}
	fs := failures(t, s, q+"_dlq", d.ID)
	if len(fs) != 1 || len([]rune(fs[0].Message)) != store.HistoryErrorMessageMax {
		t.Fatalf("history keeps %d characters, want %d", len([]rune(fs[0].Message)), store.HistoryErrorMessageMax)
	}
}

// A message already read more than max_retries times (its workers crashed)
// is dead-lettered at read time without running, with no error keys.
func TestReadTimeDeadLettering(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 2 })
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { calls.Add(1); return nil })
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	for range 2 { // two deliveries that "crashed"
		if got, err := s.Read(ctx, q, time.Second, 1); err != nil || len(got) != 1 {
			t.Fatalf("read: %v %v", got, err)
		}
		if _, err := s.SetVisibility(ctx, q, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Start(t, c)
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	b := deadMessages(t, s, q)[0].Block
	if b["attempts"] != 3.0 || b["reason"] != store.ReasonMaxRetriesExceeded || b["max_retries"] != 2.0 {
		t.Fatalf("block = %v; want attempts 3 = max_retries + 1", b)
	}
	for _, k := range []string{"error_class", "error_message", "backtrace", "error_attempt", "error_recorded_at"} {
		if _, ok := b[k]; ok {
			t.Errorf("block has %s although no failure was recorded", k)
		}
	}
	if calls.Load() != 0 {
		t.Fatal("the handler ran for a message past its retries")
	}
}

func TestPerKindRetryOverride(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	one := engine.DefaultRetryPolicy()
	one.MaxRetries = 1
	c.Handle("once", failN(100, &calls), engine.HandlerOptions{Retry: &one})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "once"})
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	if b := deadMessages(t, s, q)[0].Block; b["max_retries"] != 1.0 || b["attempts"] != 1.0 || calls.Load() != 1 {
		t.Fatalf("block = %v calls = %d; want one attempt under the kind's policy", b, calls.Load())
	}
}

func TestIdempotencyKeyAndJobFields(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	jobs := make(chan engine.Job, 2)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { jobs <- *job; return nil })
	pgtest.Start(t, c)
	withKey := pgtest.Send(t, c, q, 1, engine.SendOptions{IdempotencyKey: "charge-42"})
	without := pgtest.Send(t, c, q, 2, engine.SendOptions{})
	got := map[int64]engine.Job{}
	for range 2 {
		select {
		case j := <-jobs:
			got[j.ID] = j
		case <-time.After(20 * time.Second):
			t.Fatal("jobs did not run")
		}
	}
	if got[withKey].IdempotencyKey != "charge-42" {
		t.Errorf("key = %q, want charge-42", got[withKey].IdempotencyKey)
	}
	if want := q + ":" + itoa(without); got[without].IdempotencyKey != want {
		t.Errorf("default key = %q, want %q", got[without].IdempotencyKey, want)
	}
	if j := got[withKey]; j.Queue != q || j.Attempt != 1 || j.MaxRetries != 5 || j.EnqueuedAt.IsZero() || string(j.Payload) != "1" {
		t.Errorf("job = %+v", j)
	}
}

// A message of a queue that deletes finished messages takes its failure
// history with it when it succeeds after failing: nothing else would ever
// prune the history of a message in neither the queue nor its archive.
func TestDeleteOnSuccessTakesFailureHistory(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.DeleteOnSuccess = true })
	var calls atomic.Int32
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, failN(2, &calls))
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the message deleted after two failures", func() bool {
		return calls.Load() == 3 && pgtest.Live(t, s, q) == 0
	})
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, q, id); n != 0 {
		t.Fatalf("%d failure rows left of message %d, deleted on success; want none", n, id)
	}
}

// An attempt that fails within a millisecond ran 0 ms: the history says so,
// where it used to keep no detail at all and show the run time as unknown.
func TestFailureWithinAMillisecondRecordsItsRunTime(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, failN(1, &calls))
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the message done after one failure", func() bool {
		return calls.Load() == 2 && pgtest.Live(t, s, q) == 0
	})
	history, err := s.FailureHistory(context.Background(), q, id)
	if err != nil || len(history) != 1 {
		t.Fatalf("history = %+v, %v; want the one failure", history, err)
	}
	if history[0].Detail.ElapsedMS == nil {
		t.Fatalf("failure detail %+v keeps no run time; want the milliseconds the attempt ran, 0 included", history[0].Detail)
	}
	if ms := *history[0].Detail.ElapsedMS; ms < 0 || ms > 10_000 {
		t.Errorf("run time %d ms; want the handler's few microseconds, rounded down", ms)
	}
}

// A handler given up on for ignoring its context keeps its slot until it
// returns: its attempt is failed, but the queue's Concurrency still bounds
// the handlers running. Freed at once, the slots started more of them, the
// same message's retries among them, while the stuck ones piled up.
func TestStuckHandlersKeepTheirSlots(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 20; qs.RetryBackoff = 20 * time.Millisecond })
	c, logs := graceClient(t, s, q, func(cfg *engine.Config) {
		cfg.Queues[0].Concurrency = 2
	})
	release := make(chan struct{})
	var running, most, started atomic.Int32
	c.Handle("stuck", func(ctx context.Context, job *engine.Job) error {
		started.Add(1)
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		defer running.Add(-1)
		<-release // ignores its context
		return nil
	}, engine.HandlerOptions{Timeout: 30 * time.Millisecond})
	pgtest.Start(t, c)
	for i := range 3 {
		pgtest.Send(t, c, q, i, engine.SendOptions{Kind: "stuck"})
	}
	pgtest.Eventually(t, 20*time.Second, "two attempts given up", func() bool {
		return strings.Count(logs.String(), "handler ignored its context") >= 2
	})
	// Time for the worker to read again, many polls over: with the slots
	// freed, it would run the third message, or the first two again.
	time.Sleep(time.Second)
	if n := started.Load(); n != 2 {
		t.Errorf("%d handlers started while both slots were held by stuck ones; want 2", n)
	}
	close(release)
	pgtest.Eventually(t, 30*time.Second, "every message done", func() bool { return pgtest.Live(t, s, q) == 0 })
	if m := most.Load(); m > 2 {
		t.Fatalf("%d handlers ran at once on a queue of concurrency 2", m)
	}
}

// A handler given up on for ignoring its context may still be acting on
// its message: its retry waits until it returns, its message kept hidden
// by the heartbeat meanwhile, so that the retry never runs beside it. It
// ran beside it once the backoff passed, the queue having slots to spare.
func TestStuckHandlerIsNotRetriedBesideItself(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) {
		qs.RetryBackoff = 20 * time.Millisecond
		qs.VisibilityTimeout = time.Second
	})
	c, logs := graceClient(t, s, q, nil)
	release := make(chan struct{})
	var o overlap
	c.Handle("stuck", func(ctx context.Context, job *engine.Job) error {
		defer o.enter()()
		if job.Attempt == 1 {
			<-release // ignores its context
			return errors.New("downstream said 503, late")
		}
		return nil
	}, engine.HandlerOptions{Timeout: 30 * time.Millisecond})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "stuck"})
	awaitGivenUp(t, logs, "the first attempt given up")
	// Two visibility timeouts after it was sent, the message read once is
	// still hidden, unless its retry ran.
	pgtest.Eventually(t, 20*time.Second, "the message still hidden past its first claim, or run again", func() bool {
		return o.calls.Load() > 1 || pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"
			WHERE msg_id = $1 AND read_ct = 1 AND vt > clock_timestamp() AND clock_timestamp() > enqueued_at + interval '2 seconds'`, id) == 1
	})
	if n := o.calls.Load(); n != 1 {
		t.Fatalf("the job ran %d times while its first attempt, given up on, still ran; want its retry to wait for it", n)
	}
	close(release)
	pgtest.Eventually(t, 20*time.Second, "the message done", func() bool { return pgtest.Live(t, s, q) == 0 })
	if m := o.most.Load(); m != 1 {
		t.Fatalf("%d attempts of the message ran at once; want 1", m)
	}
	if f := failures(t, s, q, id); len(f) != 1 || f[0].Class != engine.ClassHandlerTimeout || f[0].Attempt != 1 {
		t.Fatalf("failures = %+v; want the first attempt's %s", f, engine.ClassHandlerTimeout)
	}
}

// A handler given up on for ignoring its context that then returns
// success did its job, late: its message is done, not run again, and no
// failure is kept of it. Its retry, which waits for it to return, ran it
// a second time.
func TestStuckHandlerThatSucceedsLateIsDone(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.RetryBackoff = 20 * time.Millisecond })
	c, logs := graceClient(t, s, q, nil)
	release := make(chan struct{})
	var calls atomic.Int32
	c.Handle("late", func(ctx context.Context, job *engine.Job) error {
		calls.Add(1)
		<-release // ignores its context
		return nil
	}, engine.HandlerOptions{Timeout: 30 * time.Millisecond})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "late"})
	awaitGivenUp(t, logs, "the attempt given up")
	close(release)
	pgtest.Eventually(t, 20*time.Second, "the message done", func() bool { return pgtest.Live(t, s, q) == 0 })
	if n := calls.Load(); n != 1 {
		t.Fatalf("the job ran %d times; want once, its late success kept", n)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id); n != 1 {
		t.Fatal("the message is not archived")
	}
	if f := failures(t, s, q, id); len(f) != 0 {
		t.Fatalf("failures = %+v; want none for a job that succeeded", f)
	}
}

// A handler given up on for ignoring its context on its last attempt is
// not dead-lettered while it runs: a retry out of the DLQ would run beside
// it, and a success it returns late would leave a dead letter of a job
// that was done. Once it returns success, its message is done.
func TestStuckHandlerOnItsLastAttemptWaitsToBeDeadLettered(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) {
		qs.MaxRetries = 1
		qs.VisibilityTimeout = time.Second
	})
	c, logs := graceClient(t, s, q, nil)
	release := make(chan struct{})
	c.Handle("late", func(ctx context.Context, job *engine.Job) error {
		<-release // ignores its context
		return nil
	}, engine.HandlerOptions{Timeout: 30 * time.Millisecond})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "late"})
	awaitGivenUp(t, logs, "the attempt given up")
	// Two visibility timeouts after it was sent, the message is still
	// hidden in its queue, unless it was dead-lettered.
	pgtest.Eventually(t, 20*time.Second, "the message still hidden past its first claim, or dead", func() bool {
		return len(deadMessages(t, s, q)) > 0 || pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"
			WHERE msg_id = $1 AND vt > clock_timestamp() AND clock_timestamp() > enqueued_at + interval '2 seconds'`, id) == 1
	})
	if d := deadMessages(t, s, q); len(d) != 0 {
		t.Fatalf("dead-lettered while its handler still ran: %v", d[0].Block)
	}
	close(release)
	pgtest.Eventually(t, 20*time.Second, "the message done", func() bool { return pgtest.Live(t, s, q) == 0 })
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id); n != 1 || len(deadMessages(t, s, q)) != 0 {
		t.Fatal("the message that succeeded late is not archived, or is dead")
	}
}

// A stop does not wait for a handler given up on past the drain timeout:
// its failure is written then, its retry put off by the visibility timeout
// at least, as the handler may run until its process ends.
func TestStopWritesTheRetryOfAStuckHandler(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.RetryBackoff = 20 * time.Millisecond })
	c, logs := graceClient(t, s, q, func(cfg *engine.Config) {
		cfg.DrainTimeout = 100 * time.Millisecond
	})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c.Handle("stuck", func(ctx context.Context, job *engine.Job) error {
		<-release // ignores its context
		return nil
	}, engine.HandlerOptions{Timeout: 30 * time.Millisecond})
	stop := pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "stuck"})
	awaitGivenUp(t, logs, "the attempt given up")
	stop() // fails the test if Run does not return
	if f := failures(t, s, q, id); len(f) != 1 || f[0].Class != engine.ClassHandlerTimeout {
		t.Fatalf("failures = %+v; want the attempt's %s written at the stop", f, engine.ClassHandlerTimeout)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND read_ct = 1
		AND vt > clock_timestamp() + interval '1 second'`, id); n != 1 {
		t.Fatal("the retry is not put off by the visibility timeout (5s) after the stop")
	}
}

// A failure whose retry would come after the message's deadline
// dead-letters it at once, with reason deadline_exceeded and the failure:
// the retry would only have been dead-lettered unrun, after a wait for
// nothing. A retry within the deadline is still made.
func TestRetryPastTheDeadlineDeadLettersNow(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) {
		qs.MaxRetries = 10
		qs.RetryBackoff, qs.RetryBackoffMax = time.Hour, time.Hour
	})
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		calls.Add(1)
		return errors.New("downstream 500")
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Deadline: time.Now().Add(30 * time.Minute)})
	pgtest.Eventually(t, 20*time.Second, "the message dead-lettered", func() bool { return len(deadMessages(t, s, q)) == 1 })
	b := deadMessages(t, s, q)[0].Block
	if b["reason"] != store.ReasonDeadlineExceeded || b["error_message"] != "downstream 500" || b["attempts"] != 1.0 || calls.Load() != 1 {
		t.Fatalf("block %v after %d runs; want deadline_exceeded with the failure of the one run", b, calls.Load())
	}
}

// Delays a handler asks for are bounded as a queue's backoff is, at
// MaxDelay: a Retry-After of years parked the message out of sight.
func TestHandlerDelaysAreBounded(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 10 })
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("retry_after", func(context.Context, *engine.Job) error {
		return engine.RetryAfter(1<<62, errors.New("429"))
	})
	c.Handle("nack", func(context.Context, *engine.Job) error { return engine.Nack(1<<62, "later") })
	c.Handle("snooze", func(context.Context, *engine.Job) error { return engine.Snooze(1 << 62) })
	// An error's own RetryAfter method, followed by ActionRetryAfterHint.
	c.Handle("hint_method", func(context.Context, *engine.Job) error { return hintedError{after: 10 * 365 * 24 * time.Hour} },
		engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Match: engine.MatchType[hintedError](), Action: engine.ActionRetryAfterHint}}})
	pgtest.Start(t, c)
	var ids []int64
	for _, kind := range []string{"retry_after", "nack", "snooze", "hint_method"} {
		ids = append(ids, pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: kind}))
	}
	latest := fmt.Sprintf("now() + interval '%d seconds'", int(engine.MaxDelay.Seconds())+60)
	pgtest.Eventually(t, 20*time.Second, "every message put off", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE vt > now() + interval '1 day'`) == 4
	})
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = ANY($1) AND vt <= `+latest, ids); n != 4 {
		t.Fatalf("%d of 4 messages put off within MaxDelay (%s)", n, engine.MaxDelay)
	}
}

// graceClient is a logged client (loggedClient) of queue q that gives up
// on a handler ignoring its context 20ms past its timeout; edit, when not
// nil, sets the rest of its configuration.
func graceClient(t *testing.T, s *store.Store, q string, edit func(*engine.Config)) (*engine.Client, *pgtest.SyncBuffer) {
	t.Helper()
	return loggedClient(t, s, q, slog.LevelInfo, func(cfg *engine.Config) {
		cfg.HandlerGrace = 20 * time.Millisecond
		if edit != nil {
			edit(cfg)
		}
	})
}

// awaitGivenUp waits for the log of a client to say it gave up on a
// handler that ignored its context; what names the attempt.
func awaitGivenUp(t *testing.T, logs *pgtest.SyncBuffer, what string) {
	t.Helper()
	pgtest.Eventually(t, 20*time.Second, what, func() bool {
		return strings.Contains(logs.String(), "handler ignored its context")
	})
}
