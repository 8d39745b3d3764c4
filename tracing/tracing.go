// Package tracing traces pgbus messages with OpenTelemetry, carrying one
// trace from a send through every attempt of the message, its
// dead-lettering and its retries out of the DLQ.
//
// A Tracer is an engine.Observer, an engine.SendObserver and an
// ops.RetryObserver: put it in engine.Config.Observers and
// ops.Options.Observers. Then:
//
//   - a send is a producer span "send <queue>" whose W3C trace context
//     goes into the message's traceparent and tracestate headers;
//   - each attempt is a consumer span "process <queue>", a child of the
//     trace context the message carries, with the attributes pgbus.queue,
//     pgbus.kind, pgbus.msg_id, pgbus.attempt, pgbus.outcome and, when it
//     failed, pgbus.error_class and status Error; dead-lettering is its
//     event "pgbus.dead_lettered";
//   - a retry out of a DLQ is a producer span "dlq_retry <dlq>", a child
//     of the trace context the dead message carries, with the event
//     "pgbus.dlq_retried"; its own context goes into the moved message's
//     headers, so the next attempts continue the same trace under it.
//
// Text that comes from jobs (error messages, kinds, error classes) goes on
// spans with its secrets hidden, as ops.RedactText hides them: a tracing
// backend is one more place text leaves the process.
//
// Services that embed the engine pass their own TracerProvider to New;
// FromEnv builds one from the standard OTEL_* environment variables, as
// pgbus work and pgbus serve do. Without a Tracer nothing is traced and
// headers are left alone. A nil *Tracer, which FromEnv returns when the
// environment turns tracing off, traces nothing: every method of it does
// nothing, so it may go in the observers as it is.
package tracing

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// ScopeName is the instrumentation scope of pgbus's spans.
const ScopeName = "github.com/pgbus/pgbus/tracing"

// Span events and attribute keys pgbus records.
const (
	EventDeadLettered = "pgbus.dead_lettered"
	EventDLQRetried   = "pgbus.dlq_retried"

	AttrQueue            = attribute.Key("pgbus.queue")
	AttrKind             = attribute.Key("pgbus.kind")
	AttrMsgID            = attribute.Key("pgbus.msg_id")
	AttrAttempt          = attribute.Key("pgbus.attempt")
	AttrMaxRetries       = attribute.Key("pgbus.max_retries")
	AttrOutcome          = attribute.Key("pgbus.outcome")
	AttrRan              = attribute.Key("pgbus.ran")
	AttrErrorClass       = attribute.Key("pgbus.error_class")
	AttrDeadLetterReason = attribute.Key("pgbus.dead_letter.reason")
	AttrDLQ              = attribute.Key("pgbus.dlq")
	AttrDLQMsgID         = attribute.Key("pgbus.dlq_msg_id")
)

// maxStatus bounds a span status's description, as the dead-letter block
// bounds an error message.
const maxStatus = store.BlockErrorMessageMax

// Tracer records pgbus's spans with one OpenTelemetry tracer. It is safe
// for concurrent use. A nil *Tracer records nothing: its methods leave
// contexts and headers as they are, so that the Tracer FromEnv returns
// may be put in the observers whether tracing is on or off.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

var _ engine.SendObserver = (*Tracer)(nil)

// New returns a Tracer recording with tp; a nil tp is the global
// provider (otel.GetTracerProvider), as set by otel.SetTracerProvider.
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Tracer{tracer: tp.Tracer(ScopeName)}
}

// Sending starts a send's span, a child of the span in ctx (or, when ctx
// has none, of a traceparent header the caller set), and writes its trace
// context into opts.Headers (made when nil). It is engine.SendObserver's
// hook; the engine hands it a copy of the caller's headers.
func (t *Tracer) Sending(ctx context.Context, queue string, opts *engine.SendOptions) func(int64, error) {
	if t == nil {
		return func(int64, error) {}
	}
	if opts.Headers == nil {
		opts.Headers = map[string]any{}
	}
	carrier := anyCarrier(opts.Headers)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = t.prop.Extract(ctx, carrier)
	}
	attrs := []attribute.KeyValue{AttrQueue.String(queue)}
	if opts.Kind != "" {
		attrs = append(attrs, AttrKind.String(redacted(opts.Kind)))
	}
	ctx, span := t.tracer.Start(ctx, "send "+queue, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	t.prop.Inject(ctx, carrier)
	return func(id int64, err error) {
		if err != nil {
			fail(span, err)
		} else {
			span.SetAttributes(AttrMsgID.Int64(id))
		}
		span.End()
	}
}

// attemptKey marks the context of an attempt whose span JobStarted began.
type attemptKey struct{}

// JobStarted starts an attempt's span, a child of the trace context the
// message carries, and returns the handler's context with it.
func (t *Tracer) JobStarted(ctx context.Context, job *engine.Job) context.Context {
	if t == nil {
		return ctx
	}
	ctx, span := t.startAttempt(ctx, job)
	return context.WithValue(ctx, attemptKey{}, span)
}

func (t *Tracer) startAttempt(ctx context.Context, job *engine.Job) (context.Context, trace.Span) {
	ctx = t.prop.Extract(ctx, jobCarrier(job.Headers))
	attrs := []attribute.KeyValue{AttrQueue.String(job.Queue), AttrMsgID.Int64(job.ID),
		AttrAttempt.Int(job.Attempt), AttrMaxRetries.Int(job.MaxRetries)}
	if job.Kind != "" {
		attrs = append(attrs, AttrKind.String(redacted(job.Kind)))
	}
	return t.tracer.Start(ctx, "process "+job.Queue, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// JobFinished records an attempt's outcome on its span and ends it. A
// message settled without running (no attempts left, past its deadline,
// no handler for its kind) gets a span of its own here.
func (t *Tracer) JobFinished(ctx context.Context, job *engine.Job, f engine.Finish) {
	if t == nil {
		return
	}
	span, ok := ctx.Value(attemptKey{}).(trace.Span)
	if !ok {
		_, span = t.startAttempt(ctx, job)
	}
	span.SetAttributes(AttrOutcome.String(f.Outcome), AttrRan.Bool(f.Ran))
	class := redacted(f.ErrorClass) // a handler's error may name its own class
	if class != "" {
		span.SetAttributes(AttrErrorClass.String(class))
	}
	if f.Err != nil && f.Outcome != engine.OutcomeSucceeded && f.Outcome != engine.OutcomeSnoozed {
		fail(span, f.Err)
	}
	if f.Outcome == engine.OutcomeDeadLettered {
		span.SetAttributes(AttrDeadLetterReason.String(f.Reason))
		attrs := []attribute.KeyValue{AttrDeadLetterReason.String(f.Reason)}
		if class != "" {
			attrs = append(attrs, AttrErrorClass.String(class))
		}
		span.AddEvent(EventDeadLettered, trace.WithAttributes(attrs...))
	}
	span.End()
}

// OutcomeAbandoned is pgbus.outcome on the span of an attempt whose
// outcome was not written (JobAbandoned).
const OutcomeAbandoned = "abandoned"

var _ engine.AbandonObserver = (*Tracer)(nil)

// JobAbandoned ends the span of an attempt whose outcome was not written
// (the worker stopped while the handler ran past its drain timeout, or
// while the outcome's write failed; the message was read again
// meanwhile, or its queue was dropped), as failed, saying why it may
// have been: otherwise the span would never end, nor be exported.
func (t *Tracer) JobAbandoned(ctx context.Context, _ *engine.Job) {
	if t == nil {
		return
	}
	span, ok := ctx.Value(attemptKey{}).(trace.Span)
	if !ok {
		return
	}
	span.SetAttributes(AttrOutcome.String(OutcomeAbandoned))
	span.SetStatus(codes.Error, "abandoned: the worker stopped, the message was read again or its queue was dropped before this attempt's outcome was written; unless its queue is gone, the message runs again")
	span.End()
}

// Retrying starts a DLQ retry's span, a child of the trace context the
// dead message carries (linked to the span in ctx, the operation's, when
// there is one), and returns the span's trace context for the moved
// message's headers. It is ops.RetryObserver's hook.
func (t *Tracer) Retrying(ctx context.Context, dlq string, id int64, carried store.TraceContext) (store.TraceContext, func(string, int64, error)) {
	if t == nil {
		return carried, func(string, int64, error) {}
	}
	parent := ctx
	var opts []trace.SpanStartOption
	if msg := t.prop.Extract(context.Background(), traceCarrier{&carried}); trace.SpanContextFromContext(msg).IsValid() {
		if op := trace.SpanContextFromContext(ctx); op.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: op}))
		}
		parent = trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(msg))
	}
	opts = append(opts, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(AttrDLQ.String(dlq), AttrDLQMsgID.Int64(id)))
	sctx, span := t.tracer.Start(parent, "dlq_retry "+dlq, opts...)
	var set store.TraceContext
	t.prop.Inject(sctx, traceCarrier{&set})
	return set, func(queue string, newID int64, err error) {
		if err != nil {
			fail(span, err)
		} else {
			span.SetAttributes(AttrQueue.String(queue), AttrMsgID.Int64(newID))
			span.AddEvent(EventDLQRetried, trace.WithAttributes(AttrDLQ.String(dlq), AttrDLQMsgID.Int64(id),
				AttrQueue.String(queue), AttrMsgID.Int64(newID)))
		}
		span.End()
	}
}

// fail marks span as failed with err's message, its secrets hidden, then
// bounded: a cut first could leave a secret without the key that marks it.
func fail(span trace.Span, err error) {
	msg := redacted(err.Error())
	if len(msg) > maxStatus {
		msg = msg[:maxStatus]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	span.SetStatus(codes.Error, msg)
}

// redacted is s with its secrets hidden: text from a job (an error
// message, a kind) may hold one, and the tracing backend must not.
func redacted(s string) string {
	out, _ := ops.RedactText(s)
	return out
}

// anyCarrier carries a trace context in send options' headers.
type anyCarrier map[string]any

func (c anyCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}
func (c anyCarrier) Set(key, value string) { c[key] = value }
func (c anyCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// jobCarrier reads a trace context from a job's headers.
type jobCarrier map[string]json.RawMessage

func (c jobCarrier) Get(key string) string {
	raw, ok := c[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
func (c jobCarrier) Set(string, string) {}
func (c jobCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// traceCarrier carries a trace context in a store.TraceContext.
type traceCarrier struct{ tc *store.TraceContext }

func (c traceCarrier) Get(key string) string {
	switch key {
	case store.HeaderTraceparent:
		return c.tc.Traceparent
	case store.HeaderTracestate:
		return c.tc.Tracestate
	}
	return ""
}
func (c traceCarrier) Set(key, value string) {
	switch key {
	case store.HeaderTraceparent:
		c.tc.Traceparent = value
	case store.HeaderTracestate:
		c.tc.Tracestate = value
	}
}
func (c traceCarrier) Keys() []string {
	return []string{store.HeaderTraceparent, store.HeaderTracestate}
}
