package store_test

import (
	"testing"
	"time"
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
