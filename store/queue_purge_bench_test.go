package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkPurgeQueue purges a queue of 1,000,000 live messages as its
// owner (a truncate) and while another session reads the table (row by
// row, as for a role that may not truncate).
func BenchmarkPurgeQueue(b *testing.B) {
	for _, read := range []bool{false, true} {
		b.Run(fmt.Sprintf("rows=1000000/reader=%v", read), func(b *testing.B) { benchmarkPurgeQueue(b, 1_000_000, read) })
	}
}

func benchmarkPurgeQueue(b *testing.B, n int, read bool) {
	s := testStore(b)
	ctx := testContext(b)
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		q := newQueue(b, s)
		table := `pgmq.` + pgx.Identifier{"q_" + q}.Sanitize()
		if _, err := s.Pool().Exec(ctx, `INSERT INTO `+table+` (vt, message)
			SELECT now(), jsonb_build_object('order_id', g) FROM generate_series(1, $1::int) g`, n); err != nil {
			b.Fatal(err)
		}
		var reader pgx.Tx
		if read {
			var err error
			if reader, err = s.Pool().Begin(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := reader.Exec(ctx, `SELECT 1 FROM `+table+` LIMIT 1`); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		got, err := s.PurgeQueue(ctx, q)
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || got != int64(n) {
			b.Fatalf("purged %d of %d: %v", got, n, err)
		}
		if reader != nil {
			_ = reader.Rollback(context.Background())
		}
		if err := s.DropQueue(ctx, q); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "rows/s")
}
