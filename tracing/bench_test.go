package tracing_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tracing"
)

// BenchmarkDrain sends b.N jobs (at least 1,000) and times 100 workers
// draining them, every job succeeding at once: with tracing off (no
// observer, no trace context in the headers) and on (every message sent
// in a sampled trace, every attempt a span, batched to an exporter that
// drops them, so the cost measured is pgbus's and the SDK's, not a
// collector's).
func BenchmarkDrain(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchDrain(b, nil) })
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		benchDrain(b, tracing.New(tp))
	})
}

func benchDrain(b *testing.B, tr *tracing.Tracer) {
	s := pgtest.Store(b)
	ctx := pgtest.Context(b)
	q := pgtest.NewFastQueue(b, s, "trb", nil)
	n := max(b.N, 1000)
	batch := make([]store.NewMessage, 0, 1000)
	for i := range n {
		opts := engine.SendOptions{Kind: "noop"}
		if tr != nil {
			done := tr.Sending(ctx, q, &opts)
			defer done(0, nil)
		}
		m, err := engine.NewMessage(`{}`, opts)
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, m)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.SendBatch(ctx, q, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	cfg := engine.Config{Queues: []engine.QueueConfig{{Name: q, Concurrency: 100}}, PollInterval: 10 * time.Millisecond}
	if tr != nil {
		cfg.Observers = []engine.Observer{tr}
	}
	c, err := engine.NewClient(s, cfg)
	if err != nil {
		b.Fatal(err)
	}
	c.Handle("noop", func(context.Context, *engine.Job) error { return nil })
	b.ResetTimer()
	began := time.Now()
	runCtx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(runCtx) }()
	for {
		empty, err := s.IsEmpty(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		if empty {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(began)
	b.StopTimer()
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
	if got := pgtest.Archived(b, s, q); got != n {
		b.Fatalf("%d of %d jobs archived", got, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkTracerPerJob is the CPU tracing adds to one job, without the
// database: building a message and decoding its headers as a worker does,
// off; and on, with a send's span and headers, then an attempt's span from
// those headers, started and finished, batched to an exporter that drops
// them.
func BenchmarkTracerPerJob(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchPerJob(b, nil) })
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		benchPerJob(b, tracing.New(tp))
	})
}

func benchPerJob(b *testing.B, tr *tracing.Tracer) {
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		opts := engine.SendOptions{Kind: "noop"}
		if tr != nil {
			tr.Sending(ctx, "q", &opts)(int64(i), nil)
		}
		m, err := engine.NewMessage(`{}`, opts)
		if err != nil {
			b.Fatal(err)
		}
		job := &engine.Job{Queue: "q", ID: int64(i), Kind: "noop", Attempt: 1, MaxRetries: 5}
		if err := json.Unmarshal(m.Headers, &job.Headers); err != nil {
			b.Fatal(err)
		}
		if tr != nil {
			jctx := tr.JobStarted(ctx, job)
			tr.JobFinished(jctx, job, engine.Finish{Outcome: engine.OutcomeSucceeded, Ran: true})
		}
	}
}
