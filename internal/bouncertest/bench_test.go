package bouncertest_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/bench"
	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// TestBenchThroughBouncer runs the drain, retry and dead workloads of
// pgbus bench through PgBouncer in transaction mode: each run checks
// itself that every job was archived (or, for dead, dead-lettered) before
// it reports a figure, and fails otherwise.
func TestBenchThroughBouncer(t *testing.T) {
	t.Parallel()
	// A database of its own: the bench's queues must not show up in the
	// bench package's own check that its runs leave none behind.
	b := bouncertest.Start(t, pgtest.NewDatabase(t))
	st := openStore(t, b.URL())
	ctx := pgtest.Context(t)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate through pgbouncer: %v", err)
	}
	for _, w := range []string{bench.Drain, bench.Retry, bench.Dead} {
		res, err := bench.Run(ctx, st, bench.Options{Workload: w, Jobs: 2000, Workers: 50})
		if err != nil {
			t.Fatalf("pgbus bench %s through pgbouncer: %v", w, err)
		}
		if res.Jobs != 2000 || res.Seconds <= 0 {
			t.Errorf("%s: result %+v; want 2,000 jobs over some time", w, res)
		}
		t.Logf("%s through pgbouncer: %.0f jobs/s (a test run, not a benchmark)", w, res.JobsPerSecond)
	}
}
