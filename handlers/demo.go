package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// TypeDemo is the handler type of the flaky simulated downstream.
const TypeDemo = "demo"

// What a demo job's "simulate" key asks the simulated downstream to do.
const (
	// SimulateOK succeeds (the default).
	SimulateOK = "ok"
	// SimulateFlaky answers 503 on the first "failures" attempts (default
	// 1), then succeeds: a burst that retries absorb.
	SimulateFlaky = "flaky"
	// SimulateThrottled answers 429 with a Retry-After on the first
	// "failures" attempts, then succeeds.
	SimulateThrottled = "throttled"
	// SimulateOutage answers 503 on every attempt until the message has
	// been retried out of its dead-letter queue once (header
	// pgbus_dlq_retries): an outage that outlasts the retries and is over
	// by the time someone retries the dead messages.
	SimulateOutage = "outage"
	// SimulatePanic panics on every attempt: a bug in the handler.
	SimulatePanic = "panic"
	// SimulateTimeout never answers: every attempt runs into the handler's
	// timeout.
	SimulateTimeout = "timeout"
)

// Error classes of the demo handler's failures, as the DLQ shows them.
const (
	ClassDemoUnavailable = "demo.Unavailable"
	ClassDemoRateLimited = "demo.RateLimited"
	ClassDemoValidation  = "demo.ValidationError"
)

// DemoPayload is what the demo handler reads from a job's payload. Other
// keys (order_id, email, ...) are carried along and ignored, except that
// amount_cents, when present, must be positive and email, when present,
// must hold an @: other values are bad input.
type DemoPayload struct {
	Simulate string `json:"simulate,omitempty"`
	// Failures is how many attempts fail for flaky and throttled; 0 means 1.
	Failures int `json:"failures,omitempty"`
	// AmountCents and Email are checked as a real handler would.
	AmountCents *int64  `json:"amount_cents,omitempty"`
	Email       *string `json:"email,omitempty"`
}

// DemoOptions are the demo handler's options in a configuration file. The
// help tag of each field is its documentation.
type DemoOptions struct {
	Latency Duration `yaml:"latency" help:"the longest simulated call; each successful call takes a part of it that depends on the message id (at most 1m, default 10ms)"`
}

// RetryAfterHint is the wait a throttled demo call asks for.
const RetryAfterHint = 100 * time.Millisecond

func buildDemo(spec Spec) (engine.HandlerFunc, engine.HandlerOptions, error) {
	opts := DemoOptions{Latency: Duration(10 * time.Millisecond)}
	if err := decodeKeyed(spec, &opts); err != nil {
		return nil, engine.HandlerOptions{}, typeError(TypeDemo, err)
	}
	if opts.Latency.D() > time.Minute {
		return nil, engine.HandlerOptions{}, typeError(TypeDemo, optionErrorf("latency", "%s is out of range 0..1m", opts.Latency))
	}
	return Demo(opts), engine.HandlerOptions{}, nil
}

// Demo returns the demo handler: a simulated downstream whose behaviour
// the payload decides, so that a run is reproducible. See the Simulate
// constants.
func Demo(opts DemoOptions) engine.HandlerFunc {
	return func(ctx context.Context, job *engine.Job) error {
		var p DemoPayload
		if err := job.Decode(&p); err != nil {
			return err
		}
		if err := p.validate(); err != nil {
			return engine.NonRetryable(err)
		}
		recovered := dlqRetries(job) > 0
		failures := max(p.Failures, 1)
		switch p.Simulate {
		case SimulateFlaky:
			if job.Attempt <= failures && !recovered {
				return &UnavailableError{Attempt: job.Attempt}
			}
		case SimulateThrottled:
			if job.Attempt <= failures && !recovered {
				return engine.RetryAfter(RetryAfterHint, &RateLimitedError{RetryAfter: RetryAfterHint})
			}
		case SimulateOutage:
			if !recovered {
				return &UnavailableError{Attempt: job.Attempt, Outage: true}
			}
		case SimulatePanic:
			panic(fmt.Sprintf("demo: simulated bug: nil pointer while handling %s", job.IdempotencyKey))
		case SimulateTimeout:
			<-ctx.Done()
			return fmt.Errorf("demo: downstream did not answer within the job's timeout: %w", ctx.Err())
		}
		return wait(ctx, simulatedLatency(job.ID, opts.Latency.D()))
	}
}

func (p DemoPayload) validate() error {
	switch p.Simulate {
	case "", SimulateOK, SimulateFlaky, SimulateThrottled, SimulateOutage, SimulatePanic, SimulateTimeout:
	default:
		return &ValidationError{Field: "simulate", Problem: fmt.Sprintf("%q is not one of ok, flaky, throttled, outage, panic, timeout", p.Simulate)}
	}
	if p.Failures < 0 || p.Failures > 1000 {
		return &ValidationError{Field: "failures", Problem: fmt.Sprintf("%d is out of range 0..1000", p.Failures)}
	}
	if p.AmountCents != nil && *p.AmountCents <= 0 {
		return &ValidationError{Field: "amount_cents", Problem: fmt.Sprintf("must be positive, got %d", *p.AmountCents)}
	}
	if p.Email != nil && !strings.Contains(*p.Email, "@") {
		return &ValidationError{Field: "email", Problem: fmt.Sprintf("%q is not an email address", *p.Email)}
	}
	return nil
}

// dlqRetries reads pgbus_dlq_retries: how often the message was retried
// out of a DLQ.
func dlqRetries(job *engine.Job) int {
	raw, ok := job.Headers[store.HeaderDLQRetries]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		var f float64
		if json.Unmarshal(raw, &f) == nil {
			return int(f)
		}
		return 0
	}
	return n
}

func simulatedLatency(id int64, limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	steps := int64(limit / time.Millisecond)
	if steps < 1 {
		return limit
	}
	return time.Duration(1+id%steps) * time.Millisecond
}

func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// UnavailableError is the simulated downstream's 503 Service Unavailable.
type UnavailableError struct {
	Attempt int
	Outage  bool
}

func (e *UnavailableError) Error() string {
	if e.Outage {
		return fmt.Sprintf("demo downstream: 503 Service Unavailable (attempt %d; the simulated outage lasts until the message is retried from its DLQ)", e.Attempt)
	}
	return fmt.Sprintf("demo downstream: 503 Service Unavailable (attempt %d)", e.Attempt)
}

// ErrorClass names the failure in the DLQ.
func (e *UnavailableError) ErrorClass() string { return ClassDemoUnavailable }

// RateLimitedError is the simulated downstream's 429 Too Many Requests.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("demo downstream: 429 Too Many Requests (Retry-After %s)", e.RetryAfter)
}

// ErrorClass names the failure in the DLQ.
func (e *RateLimitedError) ErrorClass() string { return ClassDemoRateLimited }

// ValidationError is bad input: retrying cannot help.
type ValidationError struct{ Field, Problem string }

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid payload: %s %s", e.Field, e.Problem)
}

// ErrorClass names the failure in the DLQ.
func (e *ValidationError) ErrorClass() string { return ClassDemoValidation }
