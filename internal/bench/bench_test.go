package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bench"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The test binary is also the worker process of the runs with more than
// one process: run with envWorker set, it runs bench.Work instead of the
// tests.
const (
	envWorker    = "PGBUS_BENCH_TEST_WORKER"
	envWorkerURL = "PGBUS_BENCH_TEST_WORKER_URL"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(envWorker); spec != "" {
		os.Exit(testWorker(spec))
	}
	os.Exit(pgtest.Main(m))
}

func testWorker(spec string) int {
	var ws bench.WorkerSpec
	if err := json.Unmarshal([]byte(spec), &ws); err != nil {
		fmt.Fprintln(os.Stderr, "bench test worker: spec:", err)
		return 2
	}
	ctx := context.Background()
	st, err := store.Open(ctx, os.Getenv(envWorkerURL))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench test worker:", err)
		return 1
	}
	defer st.Close()
	if err := bench.Work(ctx, st, ws, os.Stdin, os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// spawnTestWorker starts this test binary as a worker process on the test
// database.
func spawnTestWorker(t *testing.T) func(context.Context, bench.WorkerSpec) *exec.Cmd {
	url := pgtest.URL(t)
	return func(ctx context.Context, spec bench.WorkerSpec) *exec.Cmd {
		b, err := json.Marshal(spec)
		if err != nil {
			t.Error(err)
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorker+"="+string(b), envWorkerURL+"="+url)
		return cmd
	}
}

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
		if res.Workload != w || res.Jobs != 300 || res.Workers != 10 || res.Processes != 1 || res.Backlog != 0 || res.Rate != 0 || res.LatencyP50MS != nil || res.MaxBacklog != nil {
			t.Errorf("%s: result %+v; want 300 jobs on 10 workers in 1 process and no steady figures", w, res)
		}
		checkRate(t, w, res)
		checkEndRate(t, w, res)
		checkTables(t, w, res)
	}
	// The ceiling drains a bulk backlog without workers, on its own
	// connections, every job archived once.
	res, err := bench.Run(ctx, s, bench.Options{Workload: bench.Ceiling, Backlog: 2000})
	if err != nil {
		t.Fatalf("ceiling: %v", err)
	}
	if res.Workload != bench.Ceiling || res.Jobs != 2000 || res.Backlog != 2000 || res.Workers != bench.CeilingConnections || res.Processes != 1 {
		t.Errorf("ceiling: result %+v; want 2,000 jobs on %d connections", res, bench.CeilingConnections)
	}
	checkRate(t, "ceiling", res)
	checkEndRate(t, "ceiling", res)
	checkTables(t, "ceiling", res)
	res, err = bench.Run(ctx, s, bench.Options{Workload: bench.Steady, Rate: 300, Duration: 2 * time.Second, Workers: 10})
	if err != nil {
		t.Fatal(err)
	}
	// The rate is kept however slow sends are: 300/s for 2s is 600 jobs,
	// and the run lasts at least as long as the sending.
	if res.Workload != bench.Steady || res.Jobs != 600 || res.Rate != 300 || res.Workers != 10 || res.Seconds < 2 {
		t.Errorf("steady: result %+v; want 600 jobs at 300/s over at least 2s", res)
	}
	checkRate(t, "steady", res)
	checkTables(t, "steady", res)
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

// checkEndRate fails unless the rate at the end covers at least the last
// tenth of the jobs, and no more than all of them, over part of the run.
func checkEndRate(t *testing.T, label string, res bench.Result) {
	t.Helper()
	if res.EndJobs < max(res.Jobs/10, 1) || res.EndJobs > res.Jobs || res.EndSeconds <= 0 || res.EndSeconds > res.Seconds ||
		math.Abs(res.EndJobsPerSecond*res.EndSeconds-float64(res.EndJobs)) > 1e-6*float64(res.EndJobs) {
		t.Errorf("%s: end rate over %d jobs in %vs at %v jobs/s (run: %d jobs in %vs); want at least the last tenth of the jobs over part of the run",
			label, res.EndJobs, res.EndSeconds, res.EndJobsPerSecond, res.Jobs, res.Seconds)
	}
}

// checkTables fails unless the run reports its queue's table, archive and
// DLQ with figures that fit a queue whose every job is done: each job
// inserted into the queue and deleted from it once, and inserted once into
// the archive (or for dead into the DLQ). Live and dead tuples are
// estimates that autovacuum's ANALYZE resets from a sample taken while
// the workers write, so they are held only to what that keeps true.
func checkTables(t *testing.T, label string, res bench.Result) {
	t.Helper()
	if len(res.Tables) != 3 || res.StatsLagging {
		t.Fatalf("%s: tables %+v (statistics lagging %v); want the queue, archive and DLQ tables, counted", label, res.Tables, res.StatsLagging)
	}
	q, a, dlq := res.Tables[0], res.Tables[1], res.Tables[2]
	if !strings.HasPrefix(q.Table, "pgmq.q_bench_") || a.Table != "pgmq.a_"+strings.TrimPrefix(q.Table, "pgmq.q_") || dlq.Table != q.Table+"_dlq" {
		t.Errorf("%s: tables %s, %s, %s; want the bench queue's table, archive and DLQ", label, q.Table, a.Table, dlq.Table)
	}
	n := int64(res.Jobs)
	done, other := a, dlq
	if res.Workload == bench.Dead {
		done, other = dlq, a
	}
	if q.Inserted != n || q.Deleted != n || done.Inserted != n || other.Inserted != 0 || other.LiveTuples != 0 {
		t.Errorf("%s: %d jobs, tables %+v; want every job inserted into and deleted from the queue once, and inserted once into %s", label, res.Jobs, res.Tables, done.Table)
	}
	if done.LiveTuples <= 0 || done.LiveTuples > 2*n || q.LiveTuples > n {
		t.Errorf("%s: %d jobs, %d live tuples in %s and %d in the queue; want about the jobs in the first, at most them in the second", label, res.Jobs, done.LiveTuples, done.Table, q.LiveTuples)
	}
	// Every deleted row is a dead tuple until a vacuum removes it.
	if q.DeadTuples <= 0 && q.Autovacuums == 0 {
		t.Errorf("%s: the queue table has %d dead tuples after %d deletes and no vacuum", label, q.DeadTuples, n)
	}
	for _, tb := range res.Tables {
		if tb.TotalBytes <= 0 {
			t.Errorf("%s: %s has size %d", label, tb.Table, tb.TotalBytes)
		}
	}
}

// A backlog queued in bulk and drained by two worker processes of four
// workers each: Run checks that every job was archived exactly once before
// it reports, and the report has both rates and the tables' figures.
func TestBacklogInProcesses(t *testing.T) {
	s := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := benchQueues(t, s, "bench_")
	var logs pgtest.SyncBuffer
	res, err := bench.Run(ctx, s, bench.Options{Workload: bench.Drain, Backlog: 2000, Workers: 8, Processes: 2,
		Spawn: spawnTestWorker(t), ChildStderr: &logs})
	if err != nil {
		t.Fatalf("%v; worker logs: %s", err, logs.String())
	}
	if res.Jobs != 2000 || res.Backlog != 2000 || res.Workers != 8 || res.Processes != 2 || res.FillSeconds <= 0 {
		t.Errorf("result %+v; want a backlog of 2000 jobs for 2 processes of 8 workers in all, and the time it took to queue", res)
	}
	checkRate(t, "backlog", res)
	checkEndRate(t, "backlog", res)
	checkTables(t, "backlog", res)
	assertNoneLeft(t, s, before, "bench_")
}

// Dead jobs worked by more processes than evenly share the workers (3
// processes of 2, 2 and 1 workers) each end in the DLQ exactly once.
func TestDeadInProcesses(t *testing.T) {
	s := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var logs pgtest.SyncBuffer
	res, err := bench.Run(ctx, s, bench.Options{Workload: bench.Dead, Jobs: 200, Workers: 5, Processes: 3,
		Spawn: spawnTestWorker(t), ChildStderr: &logs})
	if err != nil {
		t.Fatalf("%v; worker logs: %s", err, logs.String())
	}
	if res.Jobs != 200 || res.Processes != 3 || res.Workers != 5 {
		t.Errorf("result %+v; want 200 jobs for 3 processes of 5 workers in all", res)
	}
	checkRate(t, "dead", res)
	checkTables(t, "dead", res)
}

// A worker process that fails at start fails the run with its log, and
// leaves no queue behind.
func TestWorkerProcessFails(t *testing.T) {
	s := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := benchQueues(t, s, "bench_")
	spawn := spawnTestWorker(t)
	_, err := bench.Run(ctx, s, bench.Options{Workload: bench.Drain, Backlog: 100, Workers: 2, Processes: 2,
		Spawn: func(ctx context.Context, spec bench.WorkerSpec) *exec.Cmd {
			spec.Workload = "nonsense"
			return spawn(ctx, spec)
		}})
	if err == nil || !strings.Contains(err.Error(), "ended before it was ready") || !strings.Contains(err.Error(), `workload "nonsense"`) {
		t.Fatalf("run with a worker that cannot start: %v; want it to say the worker ended and why", err)
	}
	assertNoneLeft(t, s, before, "bench_")
}

func TestBadOptions(t *testing.T) {
	s := testStore(t)
	spawn := func(context.Context, bench.WorkerSpec) *exec.Cmd {
		t.Error("no worker process should start")
		return nil
	}
	for label, c := range map[string]struct {
		o    bench.Options
		want string
	}{
		"unknown workload":       {bench.Options{Workload: "fast"}, "workload"},
		"negative jobs":          {bench.Options{Workload: bench.Drain, Jobs: -1}, "jobs -1"},
		"huge jobs":              {bench.Options{Workload: bench.Drain, Jobs: 1 << 40}, "out of range"},
		"negative workers":       {bench.Options{Workload: bench.Drain, Workers: -5}, "workers -5"},
		"short duration":         {bench.Options{Workload: bench.Steady, Duration: time.Millisecond}, "duration"},
		"negative backlog":       {bench.Options{Workload: bench.Drain, Backlog: -1}, "backlog -1"},
		"huge backlog":           {bench.Options{Workload: bench.Drain, Backlog: bench.MaxJobs + 1}, "out of range"},
		"backlog and jobs":       {bench.Options{Workload: bench.Drain, Backlog: 100, Jobs: 200}, "set one"},
		"steady backlog":         {bench.Options{Workload: bench.Steady, Backlog: 100}, "steady"},
		"negative processes":     {bench.Options{Workload: bench.Drain, Processes: -1, Spawn: spawn}, "processes -1"},
		"huge processes":         {bench.Options{Workload: bench.Drain, Processes: bench.MaxProcesses + 1, Workers: 1000, Spawn: spawn}, "out of range"},
		"processes over workers": {bench.Options{Workload: bench.Drain, Processes: 4, Workers: 3, Spawn: spawn}, "at least one worker each"},
		"steady processes":       {bench.Options{Workload: bench.Steady, Processes: 2, Spawn: spawn}, "steady"},
		"ceiling processes":      {bench.Options{Workload: bench.Ceiling, Processes: 2, Spawn: spawn}, "ceiling runs in one process"},
		"processes, no spawn":    {bench.Options{Workload: bench.Drain, Processes: 2}, "Spawn"},
	} {
		_, err := bench.Run(context.Background(), s, c.o)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", label, err, c.want)
		}
	}
}

// Work refuses a spec it cannot run, and a worker started by hand (not by
// a benchmark) that reads something else than the start line.
func TestWorkBadInput(t *testing.T) {
	s := testStore(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, s, "benchwork")
	for label, spec := range map[string]bench.WorkerSpec{
		"steady":       {Queue: q, Workload: bench.Steady, Workers: 1},
		"no workers":   {Queue: q, Workload: bench.Drain},
		"bad queue":    {Queue: "no such queue", Workload: bench.Drain, Workers: 1},
		"many workers": {Queue: q, Workload: bench.Drain, Workers: 1 << 30},
	} {
		if err := bench.Work(ctx, s, spec, strings.NewReader(""), io.Discard, nil); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", label, err)
		}
	}
	var out strings.Builder
	err := bench.Work(ctx, s, bench.WorkerSpec{Queue: q, Workload: bench.Drain, Workers: 1}, strings.NewReader("start\n"), &out, nil)
	if err == nil || !strings.Contains(err.Error(), "pgbus bench --processes") || out.String() != "ready\n" {
		t.Errorf("a worker told %q: %v, wrote %q; want it to say it runs under pgbus bench --processes", "start", err, out.String())
	}
	// Input that ends before the start line is a benchmark gone: no error.
	out.Reset()
	if err := bench.Work(ctx, s, bench.WorkerSpec{Queue: q, Workload: bench.Drain, Workers: 1}, strings.NewReader(""), &out, nil); err != nil || out.String() != "ready\n" {
		t.Errorf("a worker whose input ended at once: %v, wrote %q; want nil after ready", err, out.String())
	}
}

// The DLQ benchmark runs every operation behind the MCP tools through the
// operations layer and every dashboard page through the dashboard's
// handler on a small load, times each, and drops its queues. A page is
// timed only once it was served with status 200 and its content.
func TestDLQBenchmarkRunsEveryOperation(t *testing.T) {
	// A database of its own: the overview page it times must list its
	// first queue, one of the 50 with the most dead messages, which other
	// packages' queues in a shared one may outnumber.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
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
