package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// benchJobs sends n jobs, works them with 100 workers and reports jobs/s
// from the workers' start until done() holds.
func benchJobs(b *testing.B, edit func(*store.QueueSettings), fn engine.HandlerFunc, check func(s *store.Store, q string, n int) error) {
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
	// Poll cheaply: counting a growing DLQ every few milliseconds would
	// compete with the workers for the machine.
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
	<-stopped
	if err := check(s, q, n); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "jobs/s")
}

// settledIn checks that all n jobs ended in the archive or, with dead, the
// DLQ.
func settledIn(dead bool) func(s *store.Store, q string, n int) error {
	return func(s *store.Store, q string, n int) error {
		where := q
		if dead {
			where = store.DLQName(q)
		}
		m, err := s.Metrics(context.Background(), where)
		if err != nil {
			return err
		}
		got := m.Archived
		if dead {
			got = m.Depth
		}
		if got != int64(n) {
			return fmt.Errorf("%d of %d jobs settled in %s", got, n, where)
		}
		return nil
	}
}

// BenchmarkNoopJobs: every job succeeds at once.
func BenchmarkNoopJobs(b *testing.B) {
	benchJobs(b, nil, func(context.Context, *engine.Job) error { return nil }, settledIn(false))
}

// BenchmarkRetryJobs: every job fails its first attempt and succeeds on the
// second, with zero backoff.
func BenchmarkRetryJobs(b *testing.B) {
	benchJobs(b, nil, func(_ context.Context, job *engine.Job) error {
		if job.Attempt == 1 {
			return errors.New("transient")
		}
		return nil
	}, settledIn(false))
}

// BenchmarkDeadJobs: every job fails every attempt; max_retries 3, zero
// backoff, until all are in the DLQ.
func BenchmarkDeadJobs(b *testing.B) {
	benchJobs(b, func(qs *store.QueueSettings) { qs.MaxRetries = 3 },
		func(context.Context, *engine.Job) error { return errors.New("permanent") }, settledIn(true))
}
