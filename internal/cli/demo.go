package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/demo"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func (a *app) demoCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the quick-start demo: flaky jobs, retries, dead letters, then what to do next",
		Long: `Run a self-contained demo on the embedded PostgreSQL (or --database-url):

 1. (re)create the queues demo_orders and demo_emails, with short retries:
    max_retries 4, backoff 50ms doubling to 1s;
 2. send a few hundred jobs for the built-in demo handler, a simulated flaky
    downstream whose behaviour each payload decides, so every run is the same:
    most succeed, bursts of 503s and 429s succeed on retry, and some die:
    an outage that outlasts the retries (demo.Unavailable), bad input
    (demo.ValidationError, at once), a handler bug (panic), hangs
    (context.DeadlineExceeded) and receipts past their deadline;
 3. run workers until every job has settled, then print the queue stats, the
    dead-letter summary, and how to connect an AI agent.

Running it again starts over: the demo queues are dropped and recreated.
The outage is over once a dead message is retried: pgbus dlq retry-all
--queue demo_orders --yes, then pgbus work --queue demo_orders --handler demo
--until-idle, and only the messages that cannot succeed are left.`,
		Example: `  pgbus demo
  go run . demo
  pgbus demo --database-url postgres://localhost/pgbus_demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDuration("timeout", timeout, time.Hour); err != nil {
				return err
			}
			return a.demo(cmd.Context(), timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up when the jobs have not settled after this long")
	return cmd
}

func (a *app) demo(ctx context.Context, timeout time.Duration) error {
	started := time.Now()
	ctx, s, err := a.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	db := s.db
	out := a.stdout
	fmt.Fprintf(out, "pgbus demo on %s\n\n", db.Where())

	queues := []workQueue{
		{Name: demo.Orders, Concurrency: 8, Handler: demo.Handler(), Settings: demo.Settings()},
		{Name: demo.Emails, Concurrency: 8, Handler: demo.Handler(), Settings: demo.Settings()},
	}
	for _, q := range queues {
		// A fresh start: the demo's queues of an earlier run go.
		if _, err := s.ops.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name}); err == nil {
			if _, err := s.ops.QueueDrop(ctx, ops.QueueDropRequest{Queue: q.Name, Confirm: true}); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if _, err := s.ops.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q.Name, Settings: settingsChange(q.Settings)}); err != nil {
			return err
		}
	}
	msgs, total, err := demo.Messages(time.Now())
	if err != nil {
		return err
	}
	for _, q := range queues {
		if _, err := s.ops.SendBatch(ctx, q.Name, msgs[q.Name]); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "sent %d jobs: %d to %s, %d to %s; working them (max_retries 4, backoff 50ms..1s)...\n",
		total, len(msgs[demo.Orders]), demo.Orders, len(msgs[demo.Emails]), demo.Emails)

	client, err := a.newWorkers(db, queues, engine.Config{PollInterval: 100 * time.Millisecond, DrainTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()

	bar := a.newProgress(total, "settling")
	waitCtx, cancelWait := context.WithTimeout(runCtx, timeout)
	waitErr := a.waitIdle(waitCtx, s.ops, queues, func(stats []ops.QueueStats) {
		settled := 0
		for _, s := range stats {
			settled += int(s.Archived + s.DLQDepth)
		}
		bar.set(min(settled, total), total)
	})
	cancelWait()
	bar.finish()
	stop()
	if err := <-done; err != nil {
		return err
	}
	if waitErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("demo: the jobs did not settle within %s; see pgbus queues", timeout)
	}
	took := time.Since(started)

	var stats []ops.QueueStats
	for _, q := range queues {
		res, err := s.ops.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name})
		if err != nil {
			return err
		}
		stats = append(stats, res.Queues...)
	}
	sum, err := s.ops.DLQSummary(ctx, ops.DLQSummaryRequest{})
	if err != nil {
		return err
	}
	groups := demoGroups(sum)
	var ok, dead int64
	for _, st := range stats {
		ok += st.Archived
		dead += st.DLQDepth
	}
	fmt.Fprintf(out, "all %d jobs settled in %.1fs: %d succeeded (some after retries), %d dead-lettered\n\n", total, took.Seconds(), ok, dead)
	fmt.Fprintln(out, "Queues (pgbus queues):")
	if err := writeQueueStats(out, stats); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nDead letters (pgbus dlq summary):")
	if err := writeDeadSummary(out, groups); err != nil {
		return err
	}
	return a.demoNextSteps(out, db, groups.Groups)
}

// demoGroups keeps the summary groups of the demo's queues.
func demoGroups(sum ops.DLQSummary) ops.DLQSummary {
	out := ops.DLQSummary{Groups: []ops.DeadGroup{}}
	for _, g := range sum.Groups {
		if g.DLQ == store.DLQName(demo.Orders) || g.DLQ == store.DLQName(demo.Emails) {
			out.Groups = append(out.Groups, g)
			out.Total += g.Count
		}
	}
	out.TotalGroups = len(out.Groups)
	return out
}

// mcpServer is pgbus's entry in an MCP client's configuration file.
type mcpServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

func (a *app) demoNextSteps(w io.Writer, db *database, groups []ops.DeadGroup) error {
	server := mcpServer{Command: "pgbus", Args: []string{"serve"}}
	setup := ""
	switch {
	case db.Embedded == nil:
		server.Env = map[string]string{EnvDatabaseURL: "<the database URL of this run>"}
		setup = "  (with DATABASE_URL set as for this run)\n"
	case a.sources["data-dir"] != "":
		dir := db.Embedded.DataDir()
		server.Args = append(server.Args, "--data-dir", dir)
		setup = "  export " + EnvDataDir + "=" + vocab.ShellQuote(dir) + "\n"
	}
	mcp, err := mcpConfigHints(server)
	if err != nil {
		return err
	}
	sample := "ID"
	for _, g := range groups {
		if g.SourceQueue == demo.Orders && len(g.SampleMsgIDs) > 0 {
			sample = fmt.Sprint(g.SampleMsgIDs[0])
			break
		}
	}
	_, err = fmt.Fprintf(w, `
Try next:
%[5]s  pgbus dlq list --queue %[1]s
  pgbus dlq show %[4]s --queue %[1]s
  # The outage is over: retry its victims, then work the queue until it is empty.
  pgbus dlq retry-all --queue %[1]s --error-class %[2]s --yes
  pgbus work --queue %[1]s --handler demo --until-idle
  pgbus dlq summary

Connect an AI agent (MCP) to investigate and repair these dead letters:
  pgbus serve%[6]s
      MCP over stdio; the agent's client starts it. For Claude Code:
  claude mcp add pgbus -- pgbus serve%[6]s
%[3]s  Then ask: "Why are jobs dying in %[1]s? Retry the ones that can succeed now."
  (pgbus must be on PATH: go build -o pgbus . or go install.)
`, demo.Orders, handlers.ClassDemoUnavailable, mcp, sample, setup, argsSuffix(server.Args[1:]))
	return err
}

func argsSuffix(args []string) string {
	if len(args) == 0 {
		return ""
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = vocab.ShellQuote(a)
	}
	return " " + strings.Join(quoted, " ")
}
