package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/bench"
)

// pgbus bench --backlog --processes drains a bulk-queued backlog with
// worker processes of this binary and prints one JSON line with both rates
// and the queue's tables, and the same on stderr for people.
func TestBenchBacklogInProcesses(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	r := pgbus(t, d.env, "bench", "--backlog", "500", "--processes", "2", "--workers", "4")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 {
		t.Fatalf("stdout %q; want one JSON line: --backlog alone runs drain only", r.stdout)
	}
	var res bench.Result
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	if res.Workload != bench.Drain || res.Jobs != 500 || res.Backlog != 500 || res.Processes != 2 || res.Workers != 4 ||
		res.JobsPerSecond <= 0 || res.EndJobsPerSecond <= 0 || res.EndJobs < 50 {
		t.Errorf("result %+v; want a drain of a 500-job backlog by 2 processes of 4 workers in all, with both rates", res)
	}
	if len(res.Tables) != 3 || !strings.HasPrefix(res.Tables[1].Table, "pgmq.a_bench_drain_") || res.Tables[1].Inserted != 500 || res.Tables[0].Deleted != 500 {
		t.Errorf("tables %+v; want the queue, its archive holding the 500 jobs, and its DLQ", res.Tables)
	}
	for _, want := range []string{"drain  500 jobs, 4 workers over 2 processes", "at the end", "backlog of 500 jobs queued",
		res.Tables[0].Table, res.Tables[1].Table, res.Tables[2].Table, "dead tuples", "median"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	noBenchWorkers(t, d)
}

// noBenchWorkers fails the test when the registry still lists a worker of
// a queue bench made: bench drops its queues, and with them the rows of
// the workers it ran on them, which pgbus workers would otherwise list,
// stopped, for a day.
func noBenchWorkers(t *testing.T, d db) {
	t.Helper()
	if n := d.count(t, `SELECT count(*) FROM pgbus.workers WHERE EXISTS (SELECT FROM unnest(queues) q WHERE q LIKE 'bench\_%')`); n != 0 {
		t.Errorf("%d worker rows name a queue bench dropped; want none", n)
	}
}

// The summary of a steady run counts the jobs it sent, as its JSON line
// does, not --jobs, which steady does not use.
func TestBenchSteadySummaryCountsTheJobsSent(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	r := pgbus(t, d.env, "bench", "--workload", "steady", "--rate", "50", "--duration", "1s", "--workers", "2")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Jobs < 1 {
		t.Fatalf("stdout %q (%v); want one JSON line with the jobs sent", r.stdout, err)
	}
	if want := fmt.Sprintf("over 1 run (%d jobs, 2 workers)", res.Jobs); !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	noBenchWorkers(t, d)
}

// Bad bench flags exit 2 with a line that says what to use, before the
// database is touched.
func TestBenchBadFlags(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--processes", "0"}, "--processes 0: use 1 to 64"},
		{[]string{"--processes", "-2"}, "--processes -2"},
		{[]string{"--processes", "1000", "--workers", "5000"}, "--processes 1000: use 1 to 64"},
		{[]string{"--processes", "5", "--workers", "4"}, "more than --workers 4"},
		{[]string{"--backlog", "0"}, "--backlog 0: use 1 to 10000000"},
		{[]string{"--backlog", "-1"}, "--backlog -1"},
		{[]string{"--backlog", "20000000"}, "--backlog 20000000"},
		{[]string{"--backlog", "100", "--jobs", "100"}, "use one"},
		{[]string{"--jobs", "0"}, "--jobs 0: use 1 to 10000000"},
		{[]string{"--jobs", "-5"}, "--jobs -5"},
		{[]string{"--backlog", "100", "--workload", "steady"}, "steady sends as it goes"},
		{[]string{"--processes", "2", "--workload", "steady"}, "steady runs in one process"},
		{[]string{"--processes", "two"}, `--processes "two": not a whole number`},
		// A 0 given is refused, not taken for the default.
		{[]string{"--workers", "0"}, "--workers 0: use 1 to 10000"},
		{[]string{"--workers", "-3"}, "--workers -3: use 1 to 10000"},
		{[]string{"--rate", "0", "--workload", "steady"}, "--rate 0: use 1 to 1000000"},
		{[]string{"--duration", "0s", "--workload", "steady"}, "--duration 0s: use 1s to 1h"},
		{[]string{"--duration", "2h", "--workload", "steady"}, "--duration 2h: use 1s to 1h"},
		{[]string{"dlq", "--messages", "0"}, "--messages 0: use 1 to 50000000"},
		{[]string{"dlq", "--queues", "0"}, "--queues 0: use 1 to 100"},
		{[]string{"dlq", "--classes", "0"}, "--classes 0: use 1 to 1000"},
		{[]string{"dlq", "--calls", "0"}, "--calls 0: use 1 to 10000"},
		{[]string{"dlq", "--deep-pages", "-1"}, "--deep-pages -1: use 1 to 100000"},
	} {
		r := usageRun(t, d.env, append([]string{"bench"}, c.args...)...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.says) {
			t.Errorf("bench %v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, r.code, r.stdout, r.stderr, c.says)
		}
	}
	if n := d.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname = 'pgbus'`); n != 0 {
		t.Errorf("bad flags created the schema")
	}
}
