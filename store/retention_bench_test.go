package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// BenchmarkPruneArchived measures PruneArchived on an archive of n rows past
// their retention and n/10 recent ones that stay, one message in ten with
// three rows of failure history, in batches of 1000 as the engine prunes.
// The archive is filled in a few statements and analyzed, as autovacuum
// leaves a table of that size, before the timer starts. With snapshot=held
// another connection holds a transaction's snapshot open meanwhile, as a
// long report, a backup or an idle transaction does on a busy database: the
// rows each batch deletes then stay in the table and its indexes, dead but
// not yet removable, for every later batch to pass over. It reports rows
// pruned per second.
func BenchmarkPruneArchived(b *testing.B) {
	for _, n := range []int{100_000, 300_000} {
		for _, held := range []bool{false, true} {
			name := fmt.Sprintf("rows=%d/snapshot=%s", n, map[bool]string{false: "none", true: "held"}[held])
			b.Run(name, func(b *testing.B) { benchmarkPrune(b, n, held) })
		}
	}
}

func benchmarkPrune(b *testing.B, n int, held bool) {
	s := testStore(b)
	ctx := testContext(b)
	var elapsed time.Duration
	pruned := 0
	for b.Loop() {
		b.StopTimer()
		q := newQueue(b, s)
		fillArchive(b, s, q, n)
		var snapshot pgx.Tx
		if held {
			snapshot = holdSnapshot(b, s)
		}
		b.StartTimer()
		start := time.Now()
		got, err := s.PruneArchived(ctx, q, time.Hour, 1000)
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || got != int64(n) {
			b.Fatalf("pruned %d of %d: %v", got, n, err)
		}
		pruned += n
		if snapshot != nil {
			_ = snapshot.Rollback(ctx)
		}
		if err := s.DropQueue(ctx, q); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(pruned)/elapsed.Seconds(), "rows/s")
}

// holdSnapshot begins a transaction that holds a snapshot until it is rolled
// back.
func holdSnapshot(b *testing.B, s *store.Store) pgx.Tx {
	b.Helper()
	ctx := testContext(b)
	tx, err := s.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		b.Fatal(err)
	}
	return tx
}

// fillArchive writes n rows archived a day ago and n/10 archived now into
// queue's archive, in msg_id order as workers archive them, with three
// failure rows for every tenth message, and analyzes both tables.
func fillArchive(b *testing.B, s *store.Store, queue string, n int) {
	b.Helper()
	ctx := testContext(b)
	a := `pgmq."a_` + queue + `"`
	for _, sql := range []string{
		`INSERT INTO ` + a + ` (msg_id, read_ct, enqueued_at, archived_at, vt, message)
			SELECT g, 1, now() - interval '1 day' - interval '1 minute',
			       now() - interval '1 day' + g * interval '1 microsecond',
			       now() - interval '1 day', jsonb_build_object('order', g, 'note', repeat('x', 100))
			FROM generate_series(1, $1::bigint) AS g`,
		`INSERT INTO ` + a + ` (msg_id, read_ct, enqueued_at, archived_at, vt, message)
			SELECT g, 1, now(), now(), now(), jsonb_build_object('order', g, 'note', repeat('x', 100))
			FROM generate_series($1::bigint + 1, $1::bigint + $1::bigint / 10) AS g`,
		`INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
			SELECT '` + queue + `', g, k, 'Timeout', 'upstream timed out'
			FROM generate_series(10, $1::bigint + $1::bigint / 10, 10) AS g, generate_series(1, 3) AS k`,
	} {
		if _, err := s.Pool().Exec(ctx, sql, n); err != nil {
			b.Fatalf("fill the archive of %s: %v", queue, err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE `+a+`, pgbus.failures`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPruneGoneFailures measures the step of retention that deletes
// the failure history of a queue dropped outside pgbus: n rows of it (three
// attempts of each message), beside n/10 rows of a queue still there that
// stay, in batches of 1000 as the engine prunes, on a database of its own
// (the step reads every queue's history). The history is filled and
// analyzed before the timer starts; snapshot=held is as in
// BenchmarkPruneArchived. It reports rows deleted per second.
func BenchmarkPruneGoneFailures(b *testing.B) {
	for _, n := range []int{100_000, 300_000} {
		for _, held := range []bool{false, true} {
			name := fmt.Sprintf("rows=%d/snapshot=%s", n, map[bool]string{false: "none", true: "held"}[held])
			b.Run(name, func(b *testing.B) { benchmarkPruneGoneFailures(b, n, held) })
		}
	}
}

func benchmarkPruneGoneFailures(b *testing.B, n int, held bool) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	kept := newQueue(b, s)
	var elapsed time.Duration
	pruned := 0
	for b.Loop() {
		b.StopTimer()
		gone := uniqueName("gone")
		fillFailures(b, s, gone, kept, n)
		var snapshot pgx.Tx
		if held {
			snapshot = holdSnapshot(b, s)
		}
		b.StartTimer()
		start := time.Now()
		got, err := store.PruneGoneFailures(ctx, s, 1000)
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || got != int64(n) {
			b.Fatalf("pruned %d of %d: %v", got, n, err)
		}
		pruned += n
		if snapshot != nil {
			_ = snapshot.Rollback(ctx)
		}
		if _, err := s.Pool().Exec(ctx, `DELETE FROM pgbus.failures`); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `VACUUM pgbus.failures`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(pruned)/elapsed.Seconds(), "rows/s")
}

// fillFailures writes n rows of failure history of queue gone, three
// attempts of each message in the order workers record them, and n/10 of
// queue kept, and analyzes the table.
func fillFailures(b *testing.B, s *store.Store, gone, kept string, n int) {
	b.Helper()
	ctx := testContext(b)
	for _, q := range []struct {
		name string
		rows int
	}{{gone, n}, {kept, n / 10}} {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
			SELECT $1, g / 3 + 1, g % 3 + 1, 'Timeout', 'upstream timed out' FROM generate_series(0, $2::bigint - 1) AS g`,
			q.name, q.rows); err != nil {
			b.Fatalf("fill the failure history of %s: %v", q.name, err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE pgbus.failures`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPruneCounters measures a retention pass over n per-minute
// counters past StatsRetention (40 queues' minutes) and n/10 recent ones
// that stay, deleted in batches of 50,000 statements, each bounded on its
// own as the engine bounds them. It reports counters pruned per second.
func BenchmarkPruneCounters(b *testing.B) {
	for _, n := range []int{200_000, 600_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			s := pgtest.OpenStore(b, pgtest.NewDatabase(b)) // a database of its own: retention prunes every counter
			ctx := testContext(b)
			var elapsed time.Duration
			pruned := 0
			for b.Loop() {
				b.StopTimer()
				if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded)
					SELECT date_trunc('minute', now()) - interval '8 days' - (i / 40) * interval '1 minute', 'svc' || (i % 40), '', 1
					FROM generate_series(0, $1 - 1) i
					UNION ALL
					SELECT date_trunc('minute', now()) - (i / 40) * interval '1 minute', 'svc' || (i % 40), '', 1
					FROM generate_series(0, $1 / 10 - 1) i`, n); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Pool().Exec(ctx, `ANALYZE pgbus.stats_minute`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				rep, err := s.RunRetention(store.WithStatementTimeout(ctx, time.Minute), 1000, 0)
				elapsed += time.Since(start)
				b.StopTimer()
				if err != nil || rep.StatsDeleted != int64(n) || len(rep.StepsFailed) != 0 {
					b.Fatalf("retention: %+v, %v; want %d counters pruned", rep, err, n)
				}
				pruned += n
				if _, err := s.Pool().Exec(ctx, `TRUNCATE pgbus.stats_minute`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(pruned)/elapsed.Seconds(), "counters/s")
		})
	}
}

// BenchmarkRetentionEmptyFleet measures a retention pass over n queues
// whose archives, and those of their DLQs, hold nothing past their
// retention, on a database of its own: the pass of a fleet with nothing to
// prune, as most passes are. It reports passes per second.
func BenchmarkRetentionEmptyFleet(b *testing.B) {
	for _, n := range []int{50, 200} {
		b.Run(fmt.Sprintf("queues=%d", n), func(b *testing.B) {
			s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
			ctx := testContext(b)
			for range n {
				newQueue(b, s)
			}
			for b.Loop() {
				rep, err := s.RunRetention(ctx, 1000, 0)
				if err != nil || !rep.Ran || len(rep.ArchivedDeleted) != 0 || len(rep.StepsFailed) != 0 {
					b.Fatalf("retention: %+v, %v", rep, err)
				}
			}
		})
	}
}
