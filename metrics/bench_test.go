package metrics_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// BenchmarkDrain drains max(b.N, 1000) jobs that succeed at once with 100
// workers, without metrics and with them (counted per job, and gathered
// with the database gauges every second meanwhile, more often than
// Prometheus scrapes), and reports jobs/s. Run it a few times and compare
// the medians; each run measures off and then on, so that a change in
// the machine's load between runs hits both:
//
//	for i in 1 2 3 4 5; do go test -run '^$' -bench Drain -benchtime 5000x ./metrics/; done
func BenchmarkDrain(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) { benchDrain(b, on) })
	}
}

func benchDrain(b *testing.B, on bool) {
	st := pgtest.Store(b)
	ctx := pgtest.Context(b)
	q := pgtest.NewFastQueue(b, st, "bench", nil)
	n := max(b.N, 1000)
	batch := make([]store.NewMessage, 0, 1000)
	for i := range n {
		batch = append(batch, store.NewMessage{Payload: json.RawMessage(`{}`)})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := st.SendBatch(ctx, q, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	cfg := engine.Config{Queues: []engine.QueueConfig{{Name: q, Concurrency: 100}}, PollInterval: 10 * time.Millisecond, RetentionInterval: -1}
	var reg *prometheus.Registry
	if on {
		svc, err := ops.New(st, ops.Options{})
		if err != nil {
			b.Fatal(err)
		}
		m := metrics.New(metrics.Options{Ops: svc})
		reg = prometheus.NewRegistry()
		reg.MustRegister(m)
		cfg.Observers = []engine.Observer{m}
	}
	c, err := engine.NewClient(st, cfg)
	if err != nil {
		b.Fatal(err)
	}
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	b.ResetTimer()
	began := time.Now()
	runCtx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = c.Run(runCtx); close(stopped) }()
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		for reg != nil && runCtx.Err() == nil {
			if _, err := reg.Gather(); err != nil {
				b.Error(err)
			}
			time.Sleep(time.Second)
		}
	}()
	for {
		empty, err := st.IsEmpty(ctx, q)
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
	<-stopped
	<-scraped
	if got := pgtest.Archived(b, st, q); got != n {
		b.Fatalf("%d of %d jobs archived", got, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkJobFinished is what counting one job costs a worker: the
// observer's part of the drain, without the database.
func BenchmarkJobFinished(b *testing.B) {
	m := metrics.New(metrics.Options{})
	job := &engine.Job{Queue: "orders", Kind: "charge"}
	f := engine.Finish{Outcome: engine.OutcomeSucceeded, Ran: true, Elapsed: time.Millisecond, Latency: 5 * time.Millisecond}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.JobFinished(ctx, job, f)
		}
	})
}
