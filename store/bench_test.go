package store_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// BenchmarkSendBatch measures sending batches of 100 messages; msgs/s is the
// figure the README reports.
func BenchmarkSendBatch(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	batch := msgs(100)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := s.SendBatch(ctx, q, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkReadArchive measures claiming 100 messages and archiving them in
// one statement each, the worker's hot path.
func BenchmarkReadArchive(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	batch := msgs(100)
	ids := make([]int64, 0, 100)
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, err := s.SendBatch(ctx, q, batch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		got, err := s.Read(ctx, q, time.Minute, 100)
		if err != nil || len(got) != 100 {
			b.Fatalf("read %d: %v", len(got), err)
		}
		ids = ids[:0]
		for _, m := range got {
			ids = append(ids, m.ID)
		}
		if _, err := s.ArchiveMany(ctx, q, ids); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(b.N*100)/elapsed.Seconds(), "msgs/s")
}

// BenchmarkDeadLetterHotGroup measures dead-lettering batches of 10 into
// one group of one DLQ from 4 goroutines per core at once, as worker
// processes do in an outage: the group's count is what they share. It
// reports the mean time of one DeadLetterMany call (the sends that feed it
// are not timed).
func BenchmarkDeadLetterHotGroup(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	dlq := store.DLQName(q)
	var spent atomic.Int64
	var calls atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		items := make([]store.DeadLetterItem, 10)
		for pb.Next() {
			ids, err := s.SendBatch(ctx, q, msgs(len(items)))
			if err != nil {
				b.Error(err)
				return
			}
			for i, id := range ids {
				items[i] = store.DeadLetterItem{MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3,
					Failure: &store.Failure{Attempt: 4, ErrorClass: "Unavailable", ErrorMessage: "upstream unavailable"}}
			}
			start := time.Now()
			if _, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, items); err != nil {
				b.Error(err)
				return
			}
			spent.Add(int64(time.Since(start)))
			calls.Add(1)
		}
	})
	if n := calls.Load(); n > 0 {
		b.ReportMetric(float64(spent.Load())/float64(n)/float64(time.Millisecond), "ms/deadletter")
	}
}
