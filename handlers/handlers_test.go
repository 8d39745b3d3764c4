package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/store"
)

func build(t *testing.T, spec handlers.Spec) (engine.HandlerFunc, engine.HandlerOptions) {
	t.Helper()
	fn, opts, err := handlers.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return fn, opts
}

func job(payload string, attempt, dlqRetries int) *engine.Job {
	h := map[string]json.RawMessage{}
	if dlqRetries > 0 {
		h[store.HeaderDLQRetries] = json.RawMessage([]byte{byte('0' + dlqRetries)})
	}
	return &engine.Job{Queue: "q", ID: 7, Attempt: attempt, MaxRetries: 4, Payload: json.RawMessage(payload), Headers: h, IdempotencyKey: "q:7"}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	if got := handlers.Types(); !slices.Contains(got, "demo") || !slices.IsSorted(got) {
		t.Fatalf("types %q", got)
	}
	_, opts := build(t, handlers.Spec{Type: "demo", Timeout: handlers.Duration(2 * time.Second), Options: map[string]any{"latency": "0s"}})
	if opts.Timeout != 2*time.Second {
		t.Fatalf("timeout %s", opts.Timeout)
	}
	for spec, says := range map[*handlers.Spec]string{
		{Type: "smtp"}: `unknown handler type "smtp"; use one of: `,
		{Type: ""}:     `unknown handler type ""`,
		{Type: "demo", Options: map[string]any{"url": "x"}}:          `handler type demo: url: unknown option; the options here are latency (and type and timeout, which every handler takes)`,
		{Type: "demo", Options: map[string]any{"latency": "fast"}}:   `"fast" is not a duration`,
		{Type: "demo", Options: map[string]any{"latency": "2m"}}:     "handler type demo: latency: 2m0s is out of range 0..1m",
		{Type: "demo", Options: map[string]any{"latency": []int{1}}}: "handler type demo: latency: expected a duration",
	} {
		if _, _, err := handlers.Build(*spec); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%+v: error %v, want %q", *spec, err, says)
		}
	}
}

func TestDemoBehaviours(t *testing.T) {
	t.Parallel()
	fn, _ := build(t, handlers.Spec{Type: "demo", Options: map[string]any{"latency": "1ms"}})
	ctx := context.Background()
	cases := []struct {
		name, payload     string
		attempt, retries  int
		class             string // "" for success
		validationProblem string
	}{
		{"ok", `{"order_id": 1}`, 1, 0, "", ""},
		{"ok explicit", `{"simulate": "ok"}`, 1, 0, "", ""},
		{"flaky first attempt", `{"simulate": "flaky", "failures": 2}`, 1, 0, handlers.ClassDemoUnavailable, ""},
		{"flaky second attempt", `{"simulate": "flaky", "failures": 2}`, 2, 0, handlers.ClassDemoUnavailable, ""},
		{"flaky recovers", `{"simulate": "flaky", "failures": 2}`, 3, 0, "", ""},
		{"flaky default one failure", `{"simulate": "flaky"}`, 2, 0, "", ""},
		{"throttled", `{"simulate": "throttled"}`, 1, 0, handlers.ClassDemoRateLimited, ""},
		{"throttled recovers", `{"simulate": "throttled"}`, 2, 0, "", ""},
		{"outage", `{"simulate": "outage"}`, 9, 0, handlers.ClassDemoUnavailable, ""},
		{"outage over after a DLQ retry", `{"simulate": "outage"}`, 1, 1, "", ""},
		{"bad amount", `{"amount_cents": 0}`, 1, 0, handlers.ClassDemoValidation, "amount_cents"},
		{"bad email", `{"email": "nobody"}`, 1, 0, handlers.ClassDemoValidation, "email"},
		{"bad simulate", `{"simulate": "meteor"}`, 1, 0, handlers.ClassDemoValidation, "simulate"},
		{"bad failures", `{"simulate": "flaky", "failures": -1}`, 1, 0, handlers.ClassDemoValidation, "failures"},
		{"bad input stays bad after a DLQ retry", `{"amount_cents": -5}`, 1, 2, handlers.ClassDemoValidation, "amount_cents"},
		{"not an object", `[1, 2]`, 1, 0, engine.ClassDecode, ""},
	}
	for _, c := range cases {
		err := fn(ctx, job(c.payload, c.attempt, c.retries))
		if c.class == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || engine.ErrorClass(err) != c.class {
			t.Errorf("%s: error %v (class %q), want class %s", c.name, err, engine.ErrorClass(err), c.class)
			continue
		}
		var ve *handlers.ValidationError
		if c.validationProblem != "" && (!errors.As(err, &ve) || ve.Field != c.validationProblem) {
			t.Errorf("%s: %v is not a validation error of %s", c.name, err, c.validationProblem)
		}
	}
}

func TestDemoPanicsAndTimeouts(t *testing.T) {
	t.Parallel()
	fn, _ := build(t, handlers.Spec{Type: "demo"})
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "simulated bug") {
				t.Errorf("recovered %v, want the simulated bug", r)
			}
		}()
		_ = fn(context.Background(), job(`{"simulate": "panic"}`, 1, 1))
		t.Error("panic did not panic")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := fn(ctx, job(`{"simulate": "timeout"}`, 1, 0))
	// It gave up because its context ended, and says so.
	if !errors.Is(err, context.DeadlineExceeded) || engine.ErrorClass(err) != "context.DeadlineExceeded" || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("timeout: %v (%s), context %v; want the context's deadline", err, engine.ErrorClass(err), ctx.Err())
	}
}

// OptionProblem says which option of a block a problem is about, and the
// key it is at: an entry of headers or env is named in the reason, not in
// front of it, where the reason would read as its value.
func TestOptionProblem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec                handlers.Spec
		key, at, reasonFrom string
	}{
		{handlers.Spec{Type: "http", Options: map[string]any{"url": "http://h/", "headers": map[string]any{"Accept": "x", "X-Two": []any{"b"}}}},
			"headers", "headers.X-Two", "in header X-Two, expected text, got a list"},
		{handlers.Spec{Type: "http", Options: map[string]any{"url": "http://h/", "headers": map[string]any{"Authorization": "Bearer ${MY-TOKEN}"}}},
			"headers", "headers.Authorization", "in header Authorization, ${MY-TOKEN} is not a variable reference"},
		{handlers.Spec{Type: "exec", Options: map[string]any{"command": []any{"/bin/true"}, "env": map[string]any{"MODE": map[string]any{"a": 1}}}},
			"env", "env.MODE", "in variable MODE, expected text, got a mapping"},
		{handlers.Spec{Type: "exec", Options: map[string]any{"command": []any{"/bin/true"}, "on_exit": map[string]any{"3": map[string]any{"action": "retry", "backof": "1s"}}}},
			"on_exit.3.backof", "on_exit.3.backof", "unknown option; the options here are action, backoff"},
		{handlers.Spec{Type: "demo", Options: map[string]any{"url": "x"}}, "url", "url", "unknown option"},
	} {
		_, _, err := handlers.Build(c.spec)
		key, at, reason, ok := handlers.OptionProblem(err)
		if !ok || key != c.key || at != c.at || !strings.HasPrefix(reason, c.reasonFrom) {
			t.Errorf("%+v: OptionProblem(%v) = %q, %q, %q, %v; want %q, %q, %q...", c.spec, err, key, at, reason, ok, c.key, c.at, c.reasonFrom)
		}
	}
	if _, _, _, ok := handlers.OptionProblem(errors.New("x")); ok {
		t.Error("OptionProblem of an error about no option says ok")
	}
}
