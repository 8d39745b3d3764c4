package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/store"
)

// BenchmarkPurgeDead measures PurgeDead (pgbus dlq purge --older-than) on
// a DLQ whose archive holds n discarded messages older than the age asked
// and n/10 recent ones that stay, one message in ten with three rows of
// failure history, filled as BenchmarkPruneArchived fills an archive, with
// snapshot=held as there. It reports messages purged per second.
func BenchmarkPurgeDead(b *testing.B) {
	for _, n := range []int{100_000, 300_000} {
		for _, held := range []bool{false, true} {
			name := fmt.Sprintf("rows=%d/snapshot=%s", n, map[bool]string{false: "none", true: "held"}[held])
			b.Run(name, func(b *testing.B) { benchmarkPurgeDead(b, n, held) })
		}
	}
}

func benchmarkPurgeDead(b *testing.B, n int, held bool) {
	s := testStore(b)
	ctx := testContext(b)
	var elapsed time.Duration
	purged := 0
	for b.Loop() {
		b.StopTimer()
		q := newQueue(b, s)
		fillArchive(b, s, store.DLQName(q), n)
		var snapshot pgx.Tx
		if held {
			snapshot = holdSnapshot(b, s)
		}
		b.StartTimer()
		start := time.Now()
		got, err := s.PurgeDead(ctx, q, time.Hour)
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || got != int64(n) {
			b.Fatalf("purged %d of %d: %v", got, n, err)
		}
		purged += n
		if snapshot != nil {
			_ = snapshot.Rollback(ctx)
		}
		if err := s.DropQueue(ctx, q); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(purged)/elapsed.Seconds(), "rows/s")
}
