package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tracing"
)

var _ ops.RetryObserver = (*tracing.Tracer)(nil)

// newTracer returns a Tracer exporting to memory, and the exporter.
func newTracer(t *testing.T) (*tracing.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tracing.New(tp), exp
}

// attr returns the value of key on a span ("" and false when absent).
func attr(kvs []attribute.KeyValue, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func event(s tracetest.SpanStub, name string) (sdktrace.Event, bool) {
	for _, e := range s.Events {
		if e.Name == name {
			return e, true
		}
	}
	return sdktrace.Event{}, false
}

// headersOf returns the headers of a live message of queue.
func headersOf(t *testing.T, s *store.Store, queue string, id int64) map[string]any {
	t.Helper()
	var raw []byte
	if err := s.Pool().QueryRow(pgtest.Context(t), `SELECT headers FROM pgmq.`+`"q_`+queue+`" WHERE msg_id = $1`, id).Scan(&raw); err != nil {
		t.Fatalf("read the headers of %s message %d: %v", queue, id, err)
	}
	h := map[string]any{}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// deadID waits until queue's DLQ holds one message and returns its id.
func deadID(t *testing.T, s *store.Store, queue string) int64 {
	t.Helper()
	dlq := store.DLQName(queue)
	pgtest.Eventually(t, 30*time.Second, "the message in "+dlq, func() bool { return pgtest.Live(t, s, dlq) == 1 })
	return int64(pgtest.Int(t, s, `SELECT msg_id FROM pgmq."q_`+dlq+`"`))
}

// One trace from send through two failed attempts, which dead-letter the
// message, and a DLQ retry to success: every span shares the send's trace
// id; the attempts are children of the send span until the retry, whose
// span is also the send's child and the parent of the attempt after it.
func TestOneTraceFromSendThroughDLQRetry(t *testing.T) {
	s := pgtest.Store(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewFastQueue(t, s, "tr", func(set *store.QueueSettings) {
		set.MaxRetries = 2
		set.RetryBackoff, set.RetryBackoffMax = 0, 0
	})
	tr, exp := newTracer(t)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{tr} })
	var fixed atomic.Bool
	var mu sync.Mutex
	handlerSpans := map[trace.SpanID]bool{} // the span in each handler's context
	var retriedParent string                // the traceparent the attempt after the retry read
	c.Handle("charge", func(ctx context.Context, job *engine.Job) error {
		mu.Lock()
		handlerSpans[trace.SpanContextFromContext(ctx).SpanID()] = true
		if fixed.Load() {
			_ = json.Unmarshal(job.Headers[store.HeaderTraceparent], &retriedParent)
		}
		mu.Unlock()
		if !fixed.Load() {
			return errors.New("card service said 503")
		}
		return nil
	})
	pgtest.Start(t, c)

	id := pgtest.Send(t, c, q, map[string]int{"cents": 100}, engine.SendOptions{Kind: "charge", Headers: map[string]any{"tenant": "acme"}})
	dlqID := deadID(t, s, q)

	fixed.Store(true)
	svc, err := ops.New(s, ops.Options{Observers: []engine.Observer{tr}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{dlqID}, Filter: ops.DeadFilter{Queue: q}})
	if err != nil || res.Retried != 1 || len(res.Moved) != 1 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	newID := res.Moved[0].MsgID
	pgtest.Eventually(t, 30*time.Second, "the retried message archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	pgtest.Eventually(t, 30*time.Second, "five spans ended", func() bool { return len(exp.GetSpans()) == 5 })

	var send, retry tracetest.SpanStub
	var attempts []tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		switch sp.Name {
		case "send " + q:
			send = sp
		case "dlq_retry " + store.DLQName(q):
			retry = sp
		case "process " + q:
			attempts = append(attempts, sp)
		default:
			t.Errorf("unexpected span %q", sp.Name)
		}
	}
	if len(attempts) != 3 || !send.SpanContext.IsValid() || !retry.SpanContext.IsValid() {
		t.Fatalf("spans: send %v, retry %v, %d attempts", send.SpanContext.IsValid(), retry.SpanContext.IsValid(), len(attempts))
	}
	tid := send.SpanContext.TraceID()
	for _, sp := range exp.GetSpans() {
		if sp.SpanContext.TraceID() != tid {
			t.Errorf("span %q is in trace %s, not the send's %s", sp.Name, sp.SpanContext.TraceID(), tid)
		}
	}

	// The send: a root producer span with the queue, kind and id.
	if send.Parent.IsValid() || send.SpanKind != trace.SpanKindProducer {
		t.Errorf("send: parent %v, kind %v; want a root producer span", send.Parent, send.SpanKind)
	}
	if v, _ := attr(send.Attributes, tracing.AttrMsgID); v.AsInt64() != id {
		t.Errorf("send msg_id %v, want %d", v.AsInt64(), id)
	}
	if v, _ := attr(send.Attributes, tracing.AttrKind); v.AsString() != "charge" {
		t.Errorf("send kind %q", v.AsString())
	}

	// Attempts 1 and 2 of the first message, children of the send, failed.
	byMsg := func(msg int64, attempt int) tracetest.SpanStub {
		for _, a := range attempts {
			m, _ := attr(a.Attributes, tracing.AttrMsgID)
			n, _ := attr(a.Attributes, tracing.AttrAttempt)
			if m.AsInt64() == msg && int(n.AsInt64()) == attempt {
				return a
			}
		}
		t.Fatalf("no span of attempt %d of message %d", attempt, msg)
		return tracetest.SpanStub{}
	}
	first, second, third := byMsg(id, 1), byMsg(id, 2), byMsg(newID, 1)
	for i, want := range []struct {
		span    tracetest.SpanStub
		parent  trace.SpanID
		outcome string
		failed  bool
	}{
		{first, send.SpanContext.SpanID(), engine.OutcomeRetried, true},
		{second, send.SpanContext.SpanID(), engine.OutcomeDeadLettered, true},
		{third, retry.SpanContext.SpanID(), engine.OutcomeSucceeded, false},
	} {
		sp := want.span
		if sp.Parent.SpanID() != want.parent || !sp.Parent.IsRemote() {
			t.Errorf("attempt span %d: parent %s (remote %v), want %s from the headers", i+1, sp.Parent.SpanID(), sp.Parent.IsRemote(), want.parent)
		}
		if sp.SpanKind != trace.SpanKindConsumer {
			t.Errorf("attempt span %d: kind %v", i+1, sp.SpanKind)
		}
		for key, v := range map[attribute.Key]string{tracing.AttrQueue: q, tracing.AttrKind: "charge", tracing.AttrOutcome: want.outcome} {
			if got, _ := attr(sp.Attributes, key); got.AsString() != v {
				t.Errorf("attempt span %d: %s = %q, want %q", i+1, key, got.AsString(), v)
			}
		}
		class, hasClass := attr(sp.Attributes, tracing.AttrErrorClass)
		switch {
		case want.failed && (sp.Status.Code != codes.Error || sp.Status.Description != "card service said 503" || class.AsString() == ""):
			t.Errorf("attempt span %d: status %+v, error class %q; want an error", i+1, sp.Status, class.AsString())
		case !want.failed && (sp.Status.Code == codes.Error || hasClass):
			t.Errorf("attempt span %d: status %+v, error class %q; want no error", i+1, sp.Status, class.AsString())
		}
		mu.Lock()
		if !handlerSpans[sp.SpanContext.SpanID()] {
			t.Errorf("attempt span %d was not in its handler's context", i+1)
		}
		mu.Unlock()
	}
	if _, ok := event(first, tracing.EventDeadLettered); ok {
		t.Error("the first attempt, retried, has a dead-letter event")
	}
	if e, ok := event(second, tracing.EventDeadLettered); !ok {
		t.Error("the second attempt has no dead-letter event")
	} else if v, _ := attr(e.Attributes, tracing.AttrDeadLetterReason); v.AsString() != store.ReasonMaxRetriesExceeded {
		t.Errorf("dead-letter reason %q", v.AsString())
	}

	// The retry: a child of the send, with its event, and the parent the
	// retried message carried to its attempt.
	if retry.Parent.SpanID() != send.SpanContext.SpanID() || retry.SpanKind != trace.SpanKindProducer {
		t.Errorf("retry: parent %s, kind %v; want the send %s, producer", retry.Parent.SpanID(), retry.SpanKind, send.SpanContext.SpanID())
	}
	e, ok := event(retry, tracing.EventDLQRetried)
	if !ok {
		t.Fatal("the retry span has no dlq_retried event")
	}
	for key, want := range map[attribute.Key]any{tracing.AttrDLQ: store.DLQName(q), tracing.AttrDLQMsgID: dlqID, tracing.AttrQueue: q, tracing.AttrMsgID: newID} {
		got, _ := attr(e.Attributes, key)
		if got.AsInterface() != want {
			t.Errorf("dlq_retried %s = %v, want %v", key, got.AsInterface(), want)
		}
	}
	mu.Lock()
	if want := "00-" + tid.String() + "-" + retry.SpanContext.SpanID().String() + "-01"; retriedParent != want {
		t.Errorf("the retried message carried traceparent %q, want %q", retriedParent, want)
	}
	mu.Unlock()
}

// With tracing off, no observer: sends and DLQ retries leave the headers
// as they were, without a trace context, and keep one a sender set.
func TestOffLeavesHeadersAlone(t *testing.T) {
	s := pgtest.Store(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewFastQueue(t, s, "troff", func(set *store.QueueSettings) { set.MaxRetries = 1 })
	svc, err := ops.New(s, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`), Kind: "k", Headers: map[string]any{"tenant": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	carried, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`), Headers: map[string]any{store.HeaderTraceparent: own}})
	if err != nil {
		t.Fatal(err)
	}
	h := headersOf(t, s, q, plain.MsgID)
	if _, ok := h[store.HeaderTraceparent]; ok || h["tenant"] != "acme" {
		t.Errorf("headers of a send with tracing off: %v", h)
	}
	if _, ok := h[store.HeaderTracestate]; ok {
		t.Errorf("headers of a send with tracing off: %v", h)
	}
	if h := headersOf(t, s, q, carried.MsgID); h[store.HeaderTraceparent] != own {
		t.Errorf("a sender's own traceparent became %v", h[store.HeaderTraceparent])
	}

	c := pgtest.NewClient(t, s, q, nil)
	var spans, runs atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		runs.Add(1)
		if trace.SpanContextFromContext(ctx).IsValid() {
			spans.Add(1)
		}
		return errors.New("fails")
	})
	stop := pgtest.Start(t, c)
	dlq := store.DLQName(q)
	pgtest.Eventually(t, 30*time.Second, "both messages in "+dlq, func() bool { return pgtest.Live(t, s, dlq) == 2 })
	stop()
	if spans.Load() != 0 || runs.Load() != 2 {
		t.Errorf("%d of %d handlers ran with a span in their context, with tracing off", spans.Load(), runs.Load())
	}
	res, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || res.Retried != 2 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	for _, m := range res.Moved {
		h := headersOf(t, s, q, m.MsgID)
		if h["tenant"] == "acme" {
			if _, ok := h[store.HeaderTraceparent]; ok {
				t.Errorf("a DLQ retry with tracing off added a trace context: %v", h)
			}
		} else if h[store.HeaderTraceparent] != own {
			t.Errorf("a DLQ retry with tracing off changed the traceparent to %v", h[store.HeaderTraceparent])
		}
		if h[store.HeaderDLQRetries] != float64(1) {
			t.Errorf("headers after the retry: %v", h)
		}
	}
}

// Every way a DLQ retry moves messages carries the trace on: one message
// by id with a corrected payload, and messages by filter in one guarded
// transaction (a dry run's expect). The moved messages carry their retry
// span's context, under the trace and tracestate they died with, and keep
// their other headers.
func TestRetryPathsCarryTheTrace(t *testing.T) {
	s := pgtest.Store(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewFastQueue(t, s, "trr", nil)
	tr, exp := newTracer(t)
	const traceID, parentID, state = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "vendor=x"
	h := `{"pgbus_kind": "k", "tenant": "acme", "traceparent": "00-` + traceID + `-` + parentID + `-01", "tracestate": "` + state + `"}`
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Headers: h}, pgtest.DeadSpec{Kind: "k", Headers: h}, pgtest.DeadSpec{Kind: "k", Headers: h})
	svc, err := ops.New(s, ops.Options{Observers: []engine.Observer{tr}})
	if err != nil {
		t.Fatal(err)
	}

	one, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"fixed": true}`)})
	if err != nil || one.Retried != 1 {
		t.Fatalf("retry with a payload: %+v, %v", one, err)
	}
	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil || dry.Retried != 2 || len(exp.GetSpans()) != 1 {
		t.Fatalf("dry run: %+v, %v, %d spans (a dry run records none)", dry, err, len(exp.GetSpans()))
	}
	rest, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Expect: dry.Expect})
	if err != nil || rest.Retried != 2 {
		t.Fatalf("guarded retry: %+v, %v", rest, err)
	}

	spans := map[int64]tracetest.SpanStub{} // by DLQ id
	for _, sp := range exp.GetSpans() {
		id, _ := attr(sp.Attributes, tracing.AttrDLQMsgID)
		spans[id.AsInt64()] = sp
		if sp.SpanContext.TraceID().String() != traceID || sp.Parent.SpanID().String() != parentID {
			t.Errorf("retry span of %d: trace %s parent %s, want %s %s", id.AsInt64(), sp.SpanContext.TraceID(), sp.Parent.SpanID(), traceID, parentID)
		}
		if _, ok := event(sp, tracing.EventDLQRetried); !ok || sp.Status.Code == codes.Error {
			t.Errorf("retry span of %d: event %v, status %+v", id.AsInt64(), ok, sp.Status)
		}
	}
	for _, m := range append(one.Moved, rest.Moved...) {
		sp, ok := spans[m.DLQMsgID]
		if !ok {
			t.Errorf("no retry span for DLQ message %d", m.DLQMsgID)
			continue
		}
		got := headersOf(t, s, q, m.MsgID)
		want := "00-" + traceID + "-" + sp.SpanContext.SpanID().String() + "-01"
		if got[store.HeaderTraceparent] != want || got[store.HeaderTracestate] != state || got["tenant"] != "acme" || got[store.HeaderDLQRetries] != float64(1) {
			t.Errorf("headers of %d moved to %d: %v; want traceparent %s", m.DLQMsgID, m.MsgID, got, want)
		}
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE message = '{"fixed": true}'`); n != 1 {
		t.Errorf("%d messages carry the corrected payload, want 1", n)
	}
}

// An attempt the worker gives up at a hard stop (its handler ran past the
// drain timeout) still ends its span, marked abandoned and failed, while
// the message stays in the queue for its visibility timeout.
func TestAbandonedAttemptEndsItsSpan(t *testing.T) {
	s := pgtest.Store(t)
	q := pgtest.NewFastQueue(t, s, "tra", nil)
	tr, exp := newTracer(t)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.DrainTimeout = 100 * time.Millisecond
		cfg.Observers = []engine.Observer{tr}
	})
	started := make(chan struct{}, 1)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}, engine.HandlerOptions{Timeout: time.Minute})
	stop := pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	<-started
	stop()
	var attempts []tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == "process "+q {
			attempts = append(attempts, sp)
		}
	}
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans exported, want the abandoned one", len(attempts))
	}
	outcome, _ := attr(attempts[0].Attributes, tracing.AttrOutcome)
	if outcome.AsString() != tracing.OutcomeAbandoned || attempts[0].Status.Code != codes.Error || attempts[0].EndTime.IsZero() {
		t.Fatalf("the abandoned attempt's span: outcome %q, status %+v, ended %v", outcome.AsString(), attempts[0].Status, attempts[0].EndTime)
	}
	if pgtest.Live(t, s, q) != 1 {
		t.Fatal("the abandoned message is not in the queue")
	}
}

// New(nil) records with the global provider, as otel.SetTracerProvider
// set it, instead of panicking at its first span.
func TestNewWithoutProviderUsesTheGlobalOne(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	done := tracing.New(nil).Sending(context.Background(), "orders", &engine.SendOptions{})
	done(1, nil)
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "send orders" {
		t.Fatalf("spans recorded through the global provider: %v, want one send orders", spans)
	}
}

// An attempt whose outcome is refused until the worker stops (its
// archive was not granted to the workers' role) ends its span abandoned,
// not succeeded: the message was not archived, and runs again. The span
// stays open while the write is retried.
func TestAttemptWhoseOutcomeIsNotWrittenEndsAbandoned(t *testing.T) {
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	q := pgtest.NewFastQueue(t, owner, "tra", nil)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "REVOKE INSERT ON pgmq.a_"+q+" FROM "+role)
	tr, exp := newTracer(t)
	var log pgtest.SyncBuffer
	c := pgtest.NewClient(t, pgtest.OpenStore(t, roleURL), q, func(cfg *engine.Config) {
		cfg.Observers = []engine.Observer{tr}
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	stop := pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the archive's refusal logged", func() bool {
		return strings.Contains(log.String(), "may not write the outcomes")
	})
	attempts := func() []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, sp := range exp.GetSpans() {
			if sp.Name == "process "+q {
				out = append(out, sp)
			}
		}
		return out
	}
	if got := attempts(); len(got) != 0 {
		outcome, _ := attr(got[0].Attributes, tracing.AttrOutcome)
		t.Fatalf("the attempt's span ended, outcome %q, while its outcome's write was refused", outcome.AsString())
	}
	stop()
	got := attempts()
	if len(got) != 1 {
		t.Fatalf("%d attempt spans exported, want the one whose outcome was not written", len(got))
	}
	outcome, _ := attr(got[0].Attributes, tracing.AttrOutcome)
	if outcome.AsString() != tracing.OutcomeAbandoned || got[0].Status.Code != codes.Error {
		t.Errorf("the attempt's span: outcome %q, status %+v; want abandoned, an error", outcome.AsString(), got[0].Status)
	}
	if n := pgtest.Archived(t, owner, q); n != 0 {
		t.Errorf("%d archived, want none", n)
	}
}
