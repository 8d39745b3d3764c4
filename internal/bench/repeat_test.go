package bench_test

import (
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/bench"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// Repeat hands over every run's result and reports the median of their
// speeds: with three runs, the middle one.
func TestRepeatReportsTheMedian(t *testing.T) {
	var speeds []float64
	median, err := bench.Repeat(pgtest.Context(t), testStore(t), bench.Options{Workload: bench.Drain, Jobs: 100, Workers: 5}, 3,
		func(r bench.Result) { speeds = append(speeds, r.JobsPerSecond) })
	if err != nil {
		t.Fatal(err)
	}
	if len(speeds) != 3 {
		t.Fatalf("%d results for 3 runs", len(speeds))
	}
	if slices.Sort(speeds); median != speeds[1] || median <= 0 {
		t.Fatalf("median %v of %v", median, speeds)
	}
}
