package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// BenchmarkLargePayloadJobs works jobs of 8 MiB payloads, one at a time,
// that succeed (archived) or fail once into the DLQ (dead), and reports
// the bytes the process allocated for each, alloc-MiB/job: what a worker
// holds, at most, for a message of that size in flight, less what the
// collector frees before the job ends.
func BenchmarkLargePayloadJobs(b *testing.B) {
	payload := json.RawMessage(`{"blob": "` + strings.Repeat("x", store.MaxPayloadBytes-20) + `"}`)
	for _, dead := range []bool{false, true} {
		name := map[bool]string{false: "archived", true: "dead"}[dead]
		b.Run(name, func(b *testing.B) {
			s := testStore(b)
			ctx := testContext(b)
			q := newQueue(b, s, func(qs *store.QueueSettings) { qs.MaxRetries = 1 })
			const n = 6
			for range n {
				if _, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: payload}}); err != nil {
					b.Fatal(err)
				}
			}
			c, err := engine.NewClient(s, engine.Config{
				Queues:       []engine.QueueConfig{{Name: q, Concurrency: 1}},
				PollInterval: 10 * time.Millisecond,
			})
			if err != nil {
				b.Fatal(err)
			}
			c.HandleQueue(q, func(_ context.Context, job *engine.Job) error {
				if len(job.Payload) != len(payload) {
					return engine.NonRetryable(errors.New("payload cut"))
				}
				if dead {
					return errors.New("permanent")
				}
				return nil
			})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			runCtx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() { _ = c.Run(runCtx); close(stopped) }()
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
			b.StopTimer()
			runtime.ReadMemStats(&after)
			cancel()
			<-stopped
			if err := settledIn(dead)(s, q, n); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n/(1<<20), "alloc-MiB/job")
		})
	}
}
