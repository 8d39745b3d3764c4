package bench_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bench"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func testStore(t *testing.T) *store.Store { return pgtest.Store(t) }

// benchQueues returns the queues named with prefix.
func benchQueues(t *testing.T, s *store.Store, prefix string) map[string]bool {
	t.Helper()
	queues, err := s.ListQueues(pgtest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, q := range queues {
		if strings.HasPrefix(q.Name, prefix) {
			out[q.Name] = true
		}
	}
	return out
}

// assertNoneLeft fails when a queue named with prefix that was not there
// before stays. The database is shared with other test binaries, whose
// runs may be in flight: their queues go when their runs end, a queue left
// behind does not.
func assertNoneLeft(t *testing.T, s *store.Store, before map[string]bool, prefix string) {
	t.Helper()
	var left []string
	defer func() {
		if t.Failed() {
			t.Logf("queues left behind: %v", left)
		}
	}()
	pgtest.Eventually(t, time.Minute, "no queue named "+prefix+"* left behind", func() bool {
		left = left[:0]
		for q := range benchQueues(t, s, prefix) {
			if !before[q] {
				left = append(left, q)
			}
		}
		return len(left) == 0
	})
}

// Every workload runs to completion on a small scale, does every job (Run
// checks the archive or the DLQ before it reports), reports figures that
// agree with each other and leaves no queue behind. How fast it ran is for
// benchmarks and `pgbus bench` to say, not for a test.
func TestWorkloadsComplete(t *testing.T) {
	s := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := benchQueues(t, s, "bench_")
	for _, w := range []string{bench.Drain, bench.Retry, bench.Dead} {
		res, err := bench.Run(ctx, s, bench.Options{Workload: w, Jobs: 300, Workers: 10})
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if res.Workload != w || res.Jobs != 300 || res.Workers != 10 || res.Rate != 0 || res.LatencyP50MS != nil || res.MaxBacklog != nil {
			t.Errorf("%s: result %+v; want 300 jobs on 10 workers and no steady figures", w, res)
		}
		checkRate(t, w, res)
	}
	res, err := bench.Run(ctx, s, bench.Options{Workload: bench.Steady, Rate: 300, Duration: 2 * time.Second, Workers: 10})
	if err != nil {
		t.Fatal(err)
	}
	// The rate is kept however slow sends are: 300/s for 2s is 600 jobs,
	// and the run lasts at least as long as the sending.
	if res.Workload != bench.Steady || res.Jobs != 600 || res.Rate != 300 || res.Workers != 10 || res.Seconds < 2 {
		t.Errorf("steady: result %+v; want 600 jobs at 300/s over at least 2s", res)
	}
	checkRate(t, "steady", res)
	if p50, p95, p99 := res.LatencyP50MS, res.LatencyP95MS, res.LatencyP99MS; p50 == nil || p95 == nil || p99 == nil ||
		*p50 < 0 || *p95 < *p50 || *p99 < *p95 {
		t.Errorf("steady: latencies %v %v %v; want 0 <= p50 <= p95 <= p99", p50, p95, p99)
	}
	if res.MaxBacklog == nil || *res.MaxBacklog < 0 || *res.MaxBacklog > int64(res.Jobs) || res.BacklogBounded == nil {
		t.Errorf("steady: backlog %v (bounded %v); want between 0 and the 600 jobs sent", res.MaxBacklog, res.BacklogBounded)
	}
	assertNoneLeft(t, s, before, "bench_")
}

// checkRate fails unless the run took some time and its rate is its jobs
// over that time.
func checkRate(t *testing.T, label string, res bench.Result) {
	t.Helper()
	if res.Seconds <= 0 || res.JobsPerSecond <= 0 || math.Abs(res.JobsPerSecond*res.Seconds-float64(res.Jobs)) > 1e-6*float64(res.Jobs) {
		t.Errorf("%s: %d jobs in %vs at %v jobs/s; want a positive time and jobs/s = jobs / seconds", label, res.Jobs, res.Seconds, res.JobsPerSecond)
	}
}

func TestBadOptions(t *testing.T) {
	s := testStore(t)
	for label, o := range map[string]bench.Options{
		"unknown workload": {Workload: "fast"},
		"negative jobs":    {Workload: bench.Drain, Jobs: -1},
		"huge jobs":        {Workload: bench.Drain, Jobs: 1 << 40},
		"negative workers": {Workload: bench.Drain, Workers: -5},
		"short duration":   {Workload: bench.Steady, Duration: time.Millisecond},
	} {
		if _, err := bench.Run(context.Background(), s, o); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", label, err)
		}
	}
}

// The DLQ benchmark runs every operation behind the MCP tools through the
// operations layer and every dashboard page through the dashboard's
// handler on a small load, times each, and drops its queues. A page is
// timed only once it was served with status 200 and its content.
func TestDLQBenchmarkRunsEveryOperation(t *testing.T) {
	s := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := benchQueues(t, s, "bench_dlq")
	res, err := bench.RunDLQ(ctx, s, bench.DLQOptions{Messages: 300, Queues: 3, Classes: 10, Calls: 3, DeepPages: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 300 || res.Queues != 3 || res.Classes != 10 || res.LoadSeconds <= 0 {
		t.Fatalf("result %+v", res)
	}
	want := []string{"dlq list first page (all DLQs)", "dlq list first page (one queue)", "dlq list page 4 (one queue)",
		"dlq list filtered by error class", "dlq show", "dlq summary", "queue stats (all queues)",
		"dashboard overview page", "dashboard dead-letter groups page", "dashboard messages page of one group",
		"dashboard messages page of one queue", "dashboard message page (payload shown)"}
	if len(res.Operations) != len(want) {
		t.Fatalf("operations %+v; want %v", res.Operations, want)
	}
	for i, op := range res.Operations {
		if op.Operation != want[i] || op.Calls != 3 || op.P50MS <= 0 || op.P99MS < op.P50MS {
			t.Errorf("operation %d = %+v; want %q timed over 3 calls", i, op, want[i])
		}
	}
	assertNoneLeft(t, s, before, "bench_dlq")
	if _, err := bench.RunDLQ(ctx, s, bench.DLQOptions{Messages: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("negative messages: %v, want ErrInvalid", err)
	}
}
