package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// benchJobs sends n jobs, works them with 100 workers and reports jobs/s
// from the workers' start until done() holds.
func benchJobs(b *testing.B, edit func(*store.QueueSettings), fn engine.HandlerFunc, done func(s *store.Store, q string, n int) bool) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s, func(qs *store.QueueSettings) {
		qs.RetryBackoff, qs.RetryBackoffMax = 0, 0
		if edit != nil {
			edit(qs)
		}
	})
	n := max(b.N, 1000)
	batch := make([]store.NewMessage, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, store.NewMessage{Payload: json.RawMessage(`{}`)})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.SendBatch(ctx, q, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	c, err := engine.NewClient(s, engine.Config{
		Queues:       []engine.QueueConfig{{Name: q, Concurrency: 100}},
		PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	c.HandleQueue(q, fn)
	b.ResetTimer()
	began := time.Now()
	runCtx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = c.Run(runCtx); close(stopped) }()
	for !done(s, q, n) {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(began)
	b.StopTimer()
	cancel()
	<-stopped
	b.ReportMetric(float64(n)/elapsed.Seconds(), "jobs/s")
}

func depth(s *store.Store, queue string) int64 {
	m, err := s.Metrics(context.Background(), queue)
	if err != nil {
		return -1
	}
	return m.Depth
}

// BenchmarkNoopJobs: every job succeeds at once.
func BenchmarkNoopJobs(b *testing.B) {
	benchJobs(b, nil, func(context.Context, *engine.Job) error { return nil },
		func(s *store.Store, q string, n int) bool { return depth(s, q) == 0 })
}

// BenchmarkRetryJobs: every job fails its first attempt and succeeds on the
// second, with zero backoff.
func BenchmarkRetryJobs(b *testing.B) {
	benchJobs(b, nil, func(_ context.Context, job *engine.Job) error {
		if job.Attempt == 1 {
			return errors.New("transient")
		}
		return nil
	}, func(s *store.Store, q string, n int) bool { return depth(s, q) == 0 })
}

// BenchmarkDeadJobs: every job fails every attempt; max_retries 3, zero
// backoff, until all are in the DLQ.
func BenchmarkDeadJobs(b *testing.B) {
	benchJobs(b, func(qs *store.QueueSettings) { qs.MaxRetries = 3 },
		func(context.Context, *engine.Job) error { return errors.New("permanent") },
		func(s *store.Store, q string, n int) bool {
			return depth(s, q) == 0 && depth(s, store.DLQName(q)) == int64(n)
		})
}
