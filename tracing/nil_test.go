package tracing_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tracing"
)

// The Tracer FromEnv returns with tracing off is nil, and the package
// says to put the Tracer in the observers: a nil one traces nothing, and
// sends, attempts, dead letters and DLQ retries go on as without it,
// where its methods dereferenced nil (the engine logged each, ops died).
func TestNilTracerFromEnvIsAnObserverThatDoesNothing(t *testing.T) {
	clearEnv(t)
	ctx := pgtest.Context(t)
	tr, shutdown, err := tracing.FromEnv(ctx)
	if err != nil || tr != nil {
		t.Fatalf("FromEnv with tracing off: %v, %v", tr, err)
	}
	defer func() { _ = shutdown(ctx) }()

	s := pgtest.Store(t)
	q := pgtest.NewFastQueue(t, s, "trnil", func(set *store.QueueSettings) { set.MaxRetries = 1 })
	var log pgtest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Observers = []engine.Observer{tr}
		cfg.Logger = logger
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return errors.New("fails") })
	stop := pgtest.Start(t, c)
	own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	pgtest.Send(t, c, q, 1, engine.SendOptions{Headers: map[string]any{store.HeaderTraceparent: own}})
	dlq := store.DLQName(q)
	pgtest.Eventually(t, 30*time.Second, "the message in "+dlq, func() bool { return pgtest.Live(t, s, dlq) == 1 })
	stop()

	svc, err := ops.New(s, ops.Options{Observers: []engine.Observer{tr}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || res.Retried != 1 {
		t.Fatalf("retry with a nil Tracer: %+v, %v", res, err)
	}
	if h := headersOf(t, s, q, res.Moved[0].MsgID); h[store.HeaderTraceparent] != own {
		t.Errorf("a nil Tracer changed the traceparent to %v", h[store.HeaderTraceparent])
	}
	if strings.Contains(log.String(), "panicked") {
		t.Errorf("a nil Tracer's methods panicked:\n%s", log.String())
	}

	// Called directly, as a program wrapping it may.
	opts := engine.SendOptions{}
	tr.Sending(ctx, q, &opts)(1, nil)
	if got := tr.JobStarted(ctx, &engine.Job{}); got != ctx {
		t.Errorf("a nil Tracer's JobStarted changed the context")
	}
	tr.JobFinished(ctx, &engine.Job{}, engine.Finish{})
	tr.JobAbandoned(ctx, &engine.Job{})
	carried := store.TraceContext{Traceparent: own}
	set, done := tr.Retrying(ctx, dlq, 1, carried)
	done(q, 2, nil)
	if set != carried {
		t.Errorf("a nil Tracer's Retrying set %+v, want the carried %+v", set, carried)
	}
}
