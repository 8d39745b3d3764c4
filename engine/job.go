package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Job is one delivery of a message to a handler.
type Job struct {
	// Queue is the physical queue the message was read from.
	Queue string
	// WorkQueue is the queue the client works (Config.Queues) that Queue
	// belongs to: the queue itself, or the queue whose priority level
	// Queue is. Stats and metrics count jobs under it.
	WorkQueue string
	// ID is the message's id in Queue.
	ID int64
	// Kind is the message's kind, which chose its handler: its pgbus_kind
	// header (a message of Ruby pgbus: its payload's job_class); "" for a
	// message without one, run by the queue's HandleQueue handler.
	Kind string
	// Attempt counts deliveries, this one included (PGMQ's read_ct). A
	// Snooze gives its attempt back, so a snoozed message comes back with
	// the same Attempt: Snoozes tells it apart.
	Attempt int
	// Snoozes counts the times a handler returned Snooze for this message
	// (its pgbus_snoozes header; an open breaker's snoozes are not
	// counted): bound a wait with it, as in "snooze until the report is
	// ready, at most 20 times, then fail". A DLQ retry starts it at 0.
	Snoozes int
	// MaxRetries is how many runs the retry policy in force gives the
	// message (the kind's HandlerOptions.Retry, else the queue's): the
	// failure of attempt MaxRetries dead-letters it, unless an error
	// policy matching the error allows more.
	MaxRetries int
	// EnqueuedAt is when the message was sent (PGMQ's enqueued_at).
	EnqueuedAt time.Time
	// Payload is the message's JSON; Decode unmarshals it.
	Payload json.RawMessage
	// Headers are the message's headers, pgbus's own (pgbus_kind, ...)
	// included; empty, not nil, for a message without any.
	Headers map[string]json.RawMessage
	// IdempotencyKey is the pgbus_idempotency_key header, or "<queue>:<id>":
	// pass it to downstream APIs so a retried job does not act twice.
	IdempotencyKey string
	// Deadline is when the message stops being worth running; zero if none.
	Deadline time.Time
}

// Decode unmarshals the payload into v, which must be a non-nil pointer.
// A payload that does not decode is bad input, so the error is
// non-retryable, of class ClassDecode: returned from a handler, it
// dead-letters the message at once.
//
// A v that is no pointer, or nil, is the handler's mistake, whatever the
// payload: the error, of class ClassDecodeTarget, wraps the
// *json.InvalidUnmarshalError and blames the handler, not the payload. It
// is non-retryable too, as a handler's panic is: every attempt would fail
// alike, and the failures would count against the kind's circuit breaker
// as the downstream's. Returned from a handler, it dead-letters the
// message at once, to retry once the handler is fixed.
func (j *Job) Decode(v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || rv.IsNil() {
		// Checked before the payload: json.Unmarshal checks the payload
		// first, and would blame a bad one for the handler's mistake.
		cause := &json.InvalidUnmarshalError{Type: reflect.TypeOf(v)}
		return NonRetryable(&classedError{class: ClassDecodeTarget, cause: cause,
			msg: fmt.Sprintf("Job.Decode needs a non-nil pointer to decode into, such as &v (%v): the handler of %s message %d is at fault, not its payload; fix the handler, then retry the dead-lettered message", cause, j.Queue, j.ID)})
	}
	if err := json.Unmarshal(j.Payload, v); err != nil {
		return NonRetryable(&classedError{class: ClassDecode,
			msg: fmt.Sprintf("payload of %s message %d does not decode into %T: %v", j.Queue, j.ID, v, err)})
	}
	return nil
}

// HandlerFunc handles one job. Return nil for success, an error to fail the
// attempt, or one made by NonRetryable, RetryAfter, Nack, Discard or Snooze
// to choose what happens next. The context ends at the job's timeout and
// when the worker shuts down for good.
type HandlerFunc func(ctx context.Context, job *Job) error

// HandlerOptions tune one kind's handling. Handle and HandleQueue keep a
// copy of them, and of the policies and breaker they point to.
type HandlerOptions struct {
	// Retry replaces the queue's retry policy for this kind, whole: a
	// field left zero is zero (a zero Backoff retries at once), so start
	// from DefaultRetryPolicy() and change what you need. Run refuses
	// MaxRetries out of 1..1000, a BackoffMax below Backoff, Jitter out of
	// 0..1 and an unknown Strategy.
	Retry *RetryPolicy
	// Timeout bounds one attempt; default: the queue's visibility timeout.
	// Run refuses one under 1ms, or negative.
	// The visibility timeout is extended by a heartbeat while the handler
	// runs, so a long timeout does not let the message reappear.
	Timeout time.Duration
	// Policies choose what happens to errors of given classes; the first
	// match wins, and unmatched errors follow the queue's retry policy.
	Policies []ErrorPolicy
	// Breaker guards the kind's downstream with a circuit breaker shared by
	// every worker process: consecutive retryable failures open it, and jobs
	// meeting it open are snoozed, using no attempt, until it may half-open.
	// Half-open, it lets one job through as its probe: a success closes it, a
	// retryable failure opens it again, and any other ending (bad input, a
	// discard, a snooze, a panic, a stop) lets the next job probe. A probe
	// is taken for lost, and another let through, only once it has run past
	// Timeout and Config.HandlerGrace.
	Breaker *store.BreakerConfig
}

// clone copies what o points to, so that a registration keeps the
// options it was given: a RetryPolicy or BreakerConfig the caller changes
// afterwards (to register the next kind with it) changed this kind's too,
// and while Run ran, unchecked and racing with the workers.
func (o HandlerOptions) clone() HandlerOptions {
	if o.Retry != nil {
		r := *o.Retry
		o.Retry = &r
	}
	if o.Breaker != nil {
		b := *o.Breaker
		o.Breaker = &b
	}
	o.Policies = slices.Clone(o.Policies)
	for i, p := range o.Policies {
		if p.Retry != nil {
			r := *p.Retry
			o.Policies[i].Retry = &r
		}
	}
	return o
}

type handler struct {
	fn   HandlerFunc
	opts HandlerOptions
}
