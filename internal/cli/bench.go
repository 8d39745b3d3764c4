package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/bench"
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
          enqueue-to-start latency p50/p95/p99 and whether the backlog stayed bounded`,
		Example: `  pgbus bench
  pgbus bench --workload drain --runs 3
  pgbus bench --workload steady --rate 5000 --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := strings.Split(workloads, ",")
			for _, w := range names {
				if !slices.Contains(bench.Workloads, w) {
					return usageError{fmt.Errorf("--workload %q: use a comma list of %s", w, strings.Join(bench.Workloads, ", "))}
				}
			}
			if runs < 1 || runs > 100 {
				return usageError{fmt.Errorf("--runs %d: use 1 to 100", runs)}
			}
			db, err := a.openDB(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer db.Close()
			opts.Logger = a.log
			for _, w := range names {
				opts.Workload = w
				median, err := bench.Repeat(cmd.Context(), db.Store, opts, runs, func(res bench.Result) { printJSONLine(a.stdout, res) })
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "%-6s median %.0f jobs/s over %d run(s) (%d jobs, %d workers)\n", w, median, runs, opts.Jobs, opts.Workers)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&workloads, "workload", "drain,retry,dead", "workloads to run, comma separated: drain, retry, dead, steady")
	f.IntVar(&opts.Jobs, "jobs", 20_000, "jobs per run (drain, retry, dead)")
	f.IntVar(&opts.Workers, "workers", 100, "worker concurrency")
	f.IntVar(&opts.Rate, "rate", 2000, "steady: jobs sent per second")
	f.DurationVar(&opts.Duration, "duration", 10*time.Second, "steady: how long producers send")
	f.IntVar(&runs, "runs", 1, "runs of each workload; the summary reports the median")
	cmd.AddCommand(a.benchDLQCommand())
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
			fmt.Fprintf(a.stderr, "%d dead messages over %d queues loaded in %.1fs\n", res.Messages, res.Queues, res.LoadSeconds)
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
