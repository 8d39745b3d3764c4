package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/bench"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/ops"
)

func (a *app) benchCommand() *cobra.Command {
	var opts bench.Options
	var workloads string
	var runs int
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency of the engine on this database",
		Long: `Run engine workloads, each on a fresh queue that is dropped afterwards, and
print one JSON line per run on stdout plus a summary on stderr.

  drain   N jobs sent up front, worked by W workers with a no-op handler
  retry   every job fails its first attempt and succeeds on its second (zero backoff)
  dead    every job fails every attempt, max_retries 3, zero backoff, until all are dead
  steady  producers send at --rate for --duration while workers drain; reports
          enqueue-to-start latency p50/p95/p99 and whether the backlog stayed bounded
  ceiling the database's own drain rate, without workers: 8 connections each
          run one statement in a loop that claims 100 messages (FOR UPDATE SKIP
          LOCKED), deletes them and inserts them into the archive; run it on the
          same backlog as drain to see how close the workers come

drain, retry and dead report the rate over the whole run and at its end (over
its last tenth of jobs), and check that every job was archived, or for dead
dead-lettered, exactly once. Every run reports the live and dead tuples and
the size of the queue's table, its archive and its DLQ at its end.

--backlog N queues N jobs in bulk (the database writes them) before the
workers start, instead of --jobs sent in batches: a backlog of 1,000,000 is
queued in seconds. Without --workload it runs drain only.

--processes P spreads the --workers over P worker processes (this binary,
started and stopped by the benchmark), so that 1 x 100, 2 x 50 and 4 x 25
workers can be compared: --workers is the total, each process gets an even
share. With 1, the default, the workers run in this process.`,
		Example: `  pgbus bench
  pgbus bench --workload drain --runs 3
  pgbus bench --workload steady --rate 5000 --duration 30s
  pgbus bench --backlog 1000000
  pgbus bench --backlog 400000 --workload ceiling,drain --runs 3
  pgbus bench --backlog 100000 --processes 4 --workers 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if f.Changed("backlog") {
				if opts.Backlog < 1 || opts.Backlog > bench.MaxJobs {
					return usageError{fmt.Errorf("--backlog %d: use 1 to %d", opts.Backlog, bench.MaxJobs)}
				}
				if f.Changed("jobs") {
					return usageError{errors.New("--jobs and --backlog both say how many jobs a run works: use one")}
				}
				opts.Jobs = 0
				if !f.Changed("workload") {
					workloads = bench.Drain
				}
			}
			if f.Changed("jobs") && (opts.Jobs < 1 || opts.Jobs > bench.MaxJobs) {
				return usageError{fmt.Errorf("--jobs %d: use 1 to %d", opts.Jobs, bench.MaxJobs)}
			}
			// The flags' defaults are the benchmark's: a 0 here was given,
			// and the library would take it for "the default".
			for _, c := range []struct {
				name   string
				v, max int
			}{{"workers", opts.Workers, engine.MaxConcurrency}, {"processes", opts.Processes, bench.MaxProcesses}, {"rate", opts.Rate, bench.MaxRate}} {
				if err := intFlagIn(c.name, c.v, c.max); err != nil {
					return err
				}
			}
			if opts.Duration < bench.MinDuration || opts.Duration > bench.MaxDuration {
				return usageError{fmt.Errorf("--duration %s: use %s to %s", ops.FormatAge(opts.Duration), ops.FormatAge(bench.MinDuration), ops.FormatAge(bench.MaxDuration))}
			}
			if opts.Processes > opts.Workers {
				return usageError{fmt.Errorf("--processes %d is more than --workers %d: --workers is the total over all processes and each needs one at least", opts.Processes, opts.Workers)}
			}
			names := strings.Split(workloads, ",")
			for _, w := range names {
				if !slices.Contains(bench.Workloads, w) {
					return usageError{fmt.Errorf("--workload %q is no workload: use a comma list of %s", w, strings.Join(bench.Workloads, ", "))}
				}
			}
			if runs < 1 || runs > 100 {
				return usageError{fmt.Errorf("--runs %d: use 1 to 100", runs)}
			}
			// The worker processes connect to the database this process
			// opens, known once it is open.
			var workerURL string
			if opts.Processes > 1 {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("bench: find this program to start the worker processes: %w", err)
				}
				opts.Spawn = a.benchWorkerSpawner(exe, &workerURL)
				opts.ChildStderr = a.stderr
			}
			for _, w := range names {
				o := opts
				o.Workload = w
				if err := o.Validate(); err != nil {
					return usageError{fmt.Errorf("bench %s: %w", w, err)}
				}
			}
			a.poolInUse = true
			db, err := a.openDB(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer db.Close()
			workerURL = a.databaseURL
			if db.Embedded != nil {
				workerURL = db.Embedded.URL()
			}
			opts.Logger = a.log
			for _, w := range names {
				opts.Workload = w
				// The runs' own counts: steady sends what its rate and
				// duration let it, not --jobs.
				var jobs []int
				median, err := bench.Repeat(cmd.Context(), db.Store, opts, runs, func(res bench.Result) {
					printJSONLine(a.stdout, res)
					printBenchText(a.stderr, res)
					jobs = append(jobs, res.Jobs)
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "%-6s median %.0f jobs/s over %s (%s, %s)\n", w, median, plural.Count(runs, "run", "runs"), jobsText(jobs), workersText(opts.Workers, opts.Processes))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&workloads, "workload", "drain,retry,dead", "workloads to run, comma separated: drain, retry, dead, steady, ceiling")
	f.IntVar(&opts.Jobs, "jobs", 20_000, "jobs per run (drain, retry, dead)")
	f.IntVar(&opts.Backlog, "backlog", 0, "jobs queued in bulk before the workers start, instead of --jobs (drain, retry, dead, ceiling; alone, drain only)")
	f.IntVar(&opts.Workers, "workers", 100, "worker concurrency, in all processes together")
	f.IntVar(&opts.Processes, "processes", 1, "worker processes to spread --workers over (drain, retry, dead)")
	f.IntVar(&opts.Rate, "rate", 2000, "steady: jobs sent per second")
	durationVar(f, &opts.Duration, "duration", 10*time.Second, "steady: how long producers send")
	f.IntVar(&runs, "runs", 1, "runs of each workload; the summary reports the median")
	cmd.AddCommand(a.benchDLQCommand(), a.benchWorkerCommand())
	return cmd
}

// intFlagIn refuses the value v of the flag name unless it is 1 to max.
func intFlagIn(name string, v, max int) error {
	if v < 1 || v > max {
		return usageError{fmt.Errorf("--%s %d: use 1 to %d", name, v, max)}
	}
	return nil
}

// jobsText words the jobs of a workload's runs: their count, or its range
// when the runs sent different numbers.
func jobsText(jobs []int) string {
	lo, hi := slices.Min(jobs), slices.Max(jobs)
	if lo == hi {
		return plural.Count(lo, "job", "jobs")
	}
	return fmt.Sprintf("%d to %d jobs", lo, hi)
}

func workersText(workers, processes int) string {
	if processes <= 1 {
		return plural.Count(workers, "worker", "workers")
	}
	return plural.Count(workers, "worker", "workers") + " over " + plural.Count(processes, "process", "processes")
}

// printBenchText writes one run's figures for people: the rates, then the
// queue's tables.
func printBenchText(w io.Writer, res bench.Result) {
	fmt.Fprintf(w, "%-6s %s, %s: %.0f jobs/s over %.2fs", res.Workload, plural.Count(res.Jobs, "job", "jobs"), workersText(res.Workers, res.Processes), res.JobsPerSecond, res.Seconds)
	if res.EndJobs > 0 {
		fmt.Fprintf(w, "; at the end %.0f jobs/s (last %s over %.2fs)", res.EndJobsPerSecond, plural.Count(res.EndJobs, "job", "jobs"), res.EndSeconds)
	}
	fmt.Fprintln(w)
	if res.Backlog > 0 {
		fmt.Fprintf(w, "       backlog of %s queued in %.2fs before the workers started\n", plural.Count(res.Backlog, "job", "jobs"), res.FillSeconds)
	}
	if res.ShrunkSeconds > 0 {
		fmt.Fprintf(w, "       queue table shrunk to 0 bytes %.1fs after the drain (workers shrink a queue gone quiet)\n", res.ShrunkSeconds)
	}
	t := newTable(w, "       table", "live tuples", "dead tuples", "inserted", "updated", "deleted", "autovacuums", "autoanalyzes", "size")
	for _, s := range res.Tables {
		t.row("       "+s.Table, s.LiveTuples, s.DeadTuples, s.Inserted, s.Updated, s.Deleted, s.Autovacuums, s.Autoanalyzes, humanBytes(s.TotalBytes))
	}
	t.flush()
	// Live and dead tuples are what the last vacuum or analyze estimated
	// plus the writes counted since; an analyze taken while the workers
	// wrote can leave live tuples in an empty queue.
	if res.StatsLagging {
		fmt.Fprintln(w, "       (the server's statistics had not counted every write of the run yet)")
	}
}

// humanBytes renders a size in the unit that keeps it short.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), "KMGT"
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, suffix[i])
}

// benchWorkerSpawner makes the commands of bench --processes's worker
// processes: this program's hidden bench worker command, on the database at
// *url, with this process's log settings. On a signal, which reaches them
// too, they stop as a worker does, finishing their jobs in hand.
func (a *app) benchWorkerSpawner(exe string, url *string) func(context.Context, bench.WorkerSpec) *exec.Cmd {
	return func(ctx context.Context, spec bench.WorkerSpec) *exec.Cmd {
		cmd := exec.CommandContext(ctx, exe, "bench", "worker", "--queue", spec.Queue, "--workload", spec.Workload,
			"--workers", strconv.Itoa(spec.Workers), "--log-level", a.logLevel, "--log-format", a.logFormat)
		// The URL settled here, not its file: both set would be refused.
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, EnvDatabaseURL+fileSuffix+"=") })
		cmd.Env = append(env, EnvDatabaseURL+"="+*url)
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = time.Minute
		return cmd
	}
}

func (a *app) benchWorkerCommand() *cobra.Command {
	var spec bench.WorkerSpec
	cmd := &cobra.Command{
		Use:    "worker",
		Hidden: true,
		Short:  "One worker process of pgbus bench --processes",
		Long: `Work a benchmark's queue as one of the worker processes that
pgbus bench --processes starts, talking with it over standard input and
output. It is not for use by hand.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := spec.Validate(); err != nil {
				return err
			}
			a.poolInUse = true
			db, err := a.openDB(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer db.Close()
			return bench.Work(cmd.Context(), db.Store, spec, a.stdin, a.stdout, a.log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Queue, "queue", "", "the benchmark's queue")
	f.StringVar(&spec.Workload, "workload", "", "drain, retry or dead")
	f.IntVar(&spec.Workers, "workers", 0, "workers in this process")
	return cmd
}

func (a *app) benchDLQCommand() *cobra.Command {
	var opts bench.DLQOptions
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Time the DLQ operations and the dashboard's pages at scale",
		Long: `Fill the DLQs of fresh queues with dead messages (bulk-loaded, never run),
then time list (first page, a page deep in the cursor chain, filtered by error
class), show, summary and all-queue stats over repeated calls, and the
dashboard's pages (overview, dead-letter groups, the messages of one group and
of one queue, one message) served by its handler without a network: server
time, from the request to the last byte of the page. Print one JSON line with
p50 and p99 of each. The queues are dropped afterwards.`,
		Example: `  pgbus bench dlq
  pgbus bench dlq --messages 100000 --calls 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// As in bench: a 0 was given, not left for the default.
			for _, c := range []struct {
				name   string
				v, max int
			}{
				{"messages", opts.Messages, bench.MaxDLQMessages}, {"queues", opts.Queues, bench.MaxDLQQueues},
				{"classes", opts.Classes, bench.MaxDLQClasses}, {"calls", opts.Calls, bench.MaxDLQCalls},
				{"deep-pages", opts.DeepPages, bench.MaxDLQDeepPages},
			} {
				if err := intFlagIn(c.name, c.v, c.max); err != nil {
					return err
				}
			}
			a.poolInUse = true
			db, err := a.openDB(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer db.Close()
			res, err := bench.RunDLQ(cmd.Context(), db.Store, opts)
			if err != nil {
				return err
			}
			printJSONLine(a.stdout, res)
			fmt.Fprintf(a.stderr, "%s over %s loaded in %.1fs\n", plural.Count(res.Messages, "dead message", "dead messages"), plural.Count(res.Queues, "queue", "queues"), res.LoadSeconds)
			for _, op := range res.Operations {
				fmt.Fprintf(a.stderr, "  %-42s p50 %8.2f ms   p99 %8.2f ms\n", op.Operation, op.P50MS, op.P99MS)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Messages, "messages", 1_000_000, "dead messages to load")
	f.IntVar(&opts.Queues, "queues", 10, "queues to spread them over")
	f.IntVar(&opts.Classes, "classes", 50, "distinct error classes")
	f.IntVar(&opts.Calls, "calls", 30, "timed calls of each operation")
	f.IntVar(&opts.DeepPages, "deep-pages", 200, "how many pages down the cursor chain the deep page is")
	return cmd
}
