package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/demo"
	"github.com/pgbus/pgbus/internal/vocab"
)

func (a *app) demoCommand() *cobra.Command {
	var timeout, callTimeout time.Duration
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
While one demo runs on a database, another started on it is refused (exit 1).
The outage is over once a dead message is retried: pgbus dlq retry-all
--queue demo_orders --yes, then pgbus work --queue demo_orders --handler demo
--until-idle, and only the messages that cannot succeed are left.`,
		Example: `  pgbus demo
  go run . demo
  pgbus demo --database-url postgres://localhost/pgbus_demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDuration("timeout", timeout, time.Second, time.Hour, "the demo's jobs take a few seconds to settle"); err != nil {
				return err
			}
			if err := a.resolveCallTimeout(cmd.Flags(), &callTimeout); err != nil {
				return err
			}
			return a.demo(cmd.Context(), timeout, callTimeout)
		},
	}
	durationVar(cmd.Flags(), &timeout, "timeout", 2*time.Minute, "give up when the jobs have not settled after this long")
	addCallTimeoutFlag(cmd.Flags(), &callTimeout)
	return cmd
}

func (a *app) demo(ctx context.Context, timeout, callTimeout time.Duration) error {
	started := time.Now()
	a.poolInUse = true // its workers
	ctx, s, err := a.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	out := a.stdout
	fmt.Fprintf(out, "pgbus demo on %s\n\n", s.db.Where())
	var bar *progress
	rep, err := demo.Run(ctx, s.db.Store, s.ops, demo.Options{Timeout: timeout, Logger: a.log, AuditRetention: a.cfg.EngineAuditRetention(), StatsRetention: a.cfg.EngineStatsRetention(), DatabaseCallTimeout: callTimeout, Observers: a.trace.observers, CommandFlags: a.demoWhere(s.db).Flags,
		Sent: func(n map[string]int, total int) {
			fmt.Fprintf(out, "sent %d jobs: %d to %s, %d to %s; working them (max_retries 4, backoff 50ms..1s)...\n",
				total, n[demo.Orders], demo.Orders, n[demo.Emails], demo.Emails)
			bar = a.newProgress(total, "settling")
		},
		Progress: func(settled, total int) { bar.set(settled, total) },
	})
	bar.finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "all %d jobs settled in %.1fs: %d succeeded (some after retries), %d dead-lettered\n\n",
		rep.Jobs, time.Since(started).Seconds(), rep.Succeeded, rep.DeadLettered)
	return a.printDemoReport(rep, s.db)
}

// printDemoReport prints how the demo's jobs ended and what to try next on
// the database db.
func (a *app) printDemoReport(rep demo.Report, db *dbopen.DB) error {
	out := a.stdout
	fmt.Fprintln(out, "Queues (pgbus queues):")
	if err := a.writeQueueStats(out, rep.Queues); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nDead letters (pgbus dlq summary):")
	if err := a.writeDeadSummary(out, rep.Dead, false); err != nil {
		return err
	}
	next, err := demo.NextSteps(a.demoWhere(db), rep.Dead.Groups)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(out, next)
	return err
}

// demoWhere is the database db of a demo as its next steps name it: the
// steps keep the global flags of its command line, and the configuration
// file its database came from (named by PGBUS_CONFIG, it is added as an
// absolute path); the agent's server starts with the file, and with
// DATABASE_URL set as for the run only when the URL did not come from it.
func (a *app) demoWhere(db *dbopen.DB) demo.Where {
	fromFile := func(name string) bool { return strings.HasPrefix(a.sources[name], "config ") }
	where := demo.Where{External: db.Embedded == nil && !fromFile("database-url"), URLCarried: a.carryURL != "", Flags: a.carry}
	if db.Embedded != nil && a.sources["data-dir"] != "" && !fromFile("data-dir") {
		where.DataDir = db.Embedded.DataDir()
	}
	if a.configPath != "" {
		abs, err := filepath.Abs(a.configPath)
		if err != nil {
			abs = a.configPath
		}
		where.Config = abs
		if a.sources["config"] != "--config" && (fromFile("database-url") || fromFile("data-dir")) {
			where.Flags += " --config " + vocab.ShellQuote(abs)
		}
	}
	return where
}
