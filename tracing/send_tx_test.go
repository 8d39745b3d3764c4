package tracing_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tracing"
)

// A job sent in the caller's transaction carries the trace as one sent by
// Send does: its send span holds its id, its headers the span's context,
// and its attempt after the commit is the send span's child.
func TestSendTxCarriesTheTrace(t *testing.T) {
	s := pgtest.Store(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewFastQueue(t, s, "trtx", nil)
	tr, exp := newTracer(t)
	var ran atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{tr} })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	pool, err := pgxpool.New(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	id, err := c.SendTx(ctx, tx, q, map[string]int{"cents": 100}, engine.SendOptions{Kind: "charge"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var send *trace.SpanContext
	for _, sp := range exp.GetSpans() {
		if sp.Name == "send "+q {
			if v, _ := attr(sp.Attributes, tracing.AttrMsgID); v.AsInt64() != id {
				t.Errorf("send span's message id %d, want %d", v.AsInt64(), id)
			}
			send = &sp.SpanContext
		}
	}
	if send == nil {
		t.Fatal("no send span exported for SendTx")
	}
	if tp, _ := headersOf(t, s, q, id)[store.HeaderTraceparent].(string); tp != "00-"+send.TraceID().String()+"-"+send.SpanID().String()+"-01" {
		t.Errorf("the message's traceparent %q is not the send span's %s/%s", tp, send.TraceID(), send.SpanID())
	}

	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the job to run", func() bool { return ran.Load() == 1 })
	pgtest.Eventually(t, time.Minute, "the attempt's span", func() bool {
		for _, sp := range exp.GetSpans() {
			if sp.Name == "process "+q && sp.Parent.SpanID() == send.SpanID() && sp.SpanContext.TraceID() == send.TraceID() {
				return true
			}
		}
		return false
	})
}
