package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
)

// Environment variables of pgbus work.
const (
	EnvQueues       = "PGBUS_QUEUES"
	EnvHandler      = "PGBUS_HANDLER"
	EnvConcurrency  = "PGBUS_CONCURRENCY"
	EnvPollInterval = "PGBUS_POLL_INTERVAL"
	EnvDrainTimeout = "PGBUS_DRAIN_TIMEOUT"
	EnvNoListen     = "PGBUS_NO_LISTEN"

	EnvDatabaseCallTimeout = "PGBUS_DATABASE_CALL_TIMEOUT"
)

// workFlags are the options of pgbus work.
type workFlags struct {
	queues      []string
	handler     string
	concurrency int
	timing      workerTiming
	untilIdle   bool
	runFor      time.Duration
	metricsAddr string
}

// workerTiming is how workers wait: the options pgbus work and pgbus
// serve's embedded workers share, settled from flag, environment and the
// configuration file's worker: section alike.
type workerTiming struct {
	pollInterval time.Duration
	drainTimeout time.Duration
	noListen     bool
	callTimeout  time.Duration
}

func (t *workerTiming) add(f *pflag.FlagSet) {
	durationVar(f, &t.pollInterval, "poll-interval", time.Second, "how often idle queues are checked for messages without a notification (env "+EnvPollInterval+", config worker.poll_interval)")
	durationVar(f, &t.drainTimeout, "drain-timeout", 30*time.Second, "how long running jobs get to finish on SIGINT/SIGTERM (env "+EnvDrainTimeout+", config worker.drain_timeout)")
	f.BoolVar(&t.noListen, "no-listen", false, "wake idle queues by polling only, without LISTEN/NOTIFY, as behind PgBouncer in transaction mode (env "+EnvNoListen+"=1, config worker.no_listen; without it pgbus checks that notifications arrive and falls back to polling when they do not)")
	addCallTimeoutFlag(f, &t.callTimeout)
}

// addCallTimeoutFlag adds --database-call-timeout, of every command that
// runs workers or serves.
func addCallTimeoutFlag(f *pflag.FlagSet, d *time.Duration) {
	durationVar(f, d, "database-call-timeout", engine.DefaultDatabaseCallTimeout, "how long a database call may go unanswered, as after a failover behind a proxy, before it is given up and its connection closed: a worker's call is tried again on another, a tool call, page or command fails saying so (env "+EnvDatabaseCallTimeout+", config worker.database_call_timeout; "+config.DatabaseCallTimeoutRange+")")
}

// resolveCallTimeout settles --database-call-timeout (flag > environment >
// configuration file > default) and checks its range.
func (a *app) resolveCallTimeout(fs *pflag.FlagSet, d *time.Duration) error {
	file := ""
	if v := a.cfg.Worker.DatabaseCallTimeout; v != nil {
		file = v.String()
	}
	if err := a.resolve(fs, "database-call-timeout", file, EnvDatabaseCallTimeout); err != nil {
		return err
	}
	if *d < engine.MinDatabaseCallTimeout || *d > config.MaxDatabaseCallTimeout {
		return usageError{fmt.Errorf("%s %s%s is out of range %s: %s", a.setting("database-call-timeout", "database call timeout"), ops.FormatAge(*d), a.from("database-call-timeout"), config.DatabaseCallTimeoutRange, config.DatabaseCallTimeoutWhy)}
	}
	a.callTimeout = *d // the operations layer's too
	return nil
}

// settleCallTimeout settles the database call timeout of the operations
// layer for a command without --database-call-timeout, from the
// environment or the configuration file, as resolveCallTimeout does for
// the commands with it, which settle it first.
func (a *app) settleCallTimeout() error {
	if a.callTimeout != 0 {
		return nil
	}
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	var d time.Duration
	addCallTimeoutFlag(fs, &d)
	return a.resolveCallTimeout(fs, &d)
}

// engineConfig is the engine's configuration for these options and the
// configuration file's audit_retention and stats_retention.
func (a *app) engineConfig(t workerTiming) engine.Config {
	return engine.Config{PollInterval: t.pollInterval, DrainTimeout: t.drainTimeout, NoListen: t.noListen,
		DatabaseCallTimeout: t.callTimeout, AuditRetention: a.cfg.EngineAuditRetention(), StatsRetention: a.cfg.EngineStatsRetention()}
}

// resolveTiming settles the timing options (flag > environment >
// configuration file > default) and checks their ranges.
func (a *app) resolveTiming(fs *pflag.FlagSet, t *workerTiming) error {
	fileDur := func(d *config.Duration) string {
		if d == nil {
			return ""
		}
		return d.String()
	}
	for _, s := range []struct{ flag, file, env string }{
		{"poll-interval", fileDur(a.cfg.Worker.PollInterval), EnvPollInterval},
		{"drain-timeout", fileDur(a.cfg.Worker.DrainTimeout), EnvDrainTimeout},
		{"no-listen", fileBool(a.cfg.Worker.NoListen), EnvNoListen},
	} {
		if err := a.resolve(fs, s.flag, s.file, s.env); err != nil {
			return err
		}
	}
	if t.pollInterval < 10*time.Millisecond || t.pollInterval > time.Hour {
		return usageError{fmt.Errorf("%s %s%s is out of range 10ms..1h", a.setting("poll-interval", "poll interval"), ops.FormatAge(t.pollInterval), a.from("poll-interval"))}
	}
	if t.drainTimeout < time.Millisecond || t.drainTimeout > 24*time.Hour {
		return usageError{fmt.Errorf("%s %s%s is out of range 1ms..24h: it is how long running jobs get to finish on SIGTERM (those still running then are cancelled and given back); give for example 30s", a.setting("drain-timeout", "drain timeout"), ops.FormatAge(t.drainTimeout), a.from("drain-timeout"))}
	}
	return a.resolveCallTimeout(fs, &t.callTimeout)
}

func (w *workFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&w.queues, "queue", nil, "work this queue, NAME or NAME:CONCURRENCY (repeatable; env "+EnvQueues+" as a comma list; default: the config file's queues)")
	f.StringVar(&w.handler, "handler", "", "handler type for the queues: "+strings.Join(handlers.Types(), ", ")+" (env "+EnvHandler+"; default: each queue's handler in the config file)")
	addConcurrencyFlag(f, &w.concurrency)
	w.timing.add(f)
	f.BoolVar(&w.untilIdle, "until-idle", false, "stop once every worked queue is empty (nothing waiting, running, retrying or scheduled: a message sent with a delay keeps it working until it has run; a paused queue, or one dropped meanwhile, counts as empty); with --for, exit 1 if its time runs out first")
	durationVar(f, &w.runFor, "for", 0, "stop after this long from the start, the wait for a database that does not answer yet included, e.g. 10m (default: until SIGINT/SIGTERM)")
	addMetricsFlag(f, &w.metricsAddr)
}

func (a *app) workCommand() *cobra.Command {
	var w workFlags
	cmd := &cobra.Command{
		Use:   "work",
		Short: "Run workers: run jobs, retry failures, dead-letter what cannot succeed",
		Long: `Work queues in this process until SIGINT or SIGTERM (or --for, or
--until-idle): run each job with its queue's handler, retry failures with
backoff, dead-letter what cannot succeed. On a signal, fetching stops, running
jobs get --drain-timeout to finish, and the rest are cancelled and given
back with their attempt (a stop is no failure): visible again at once, or
after their visibility timeout when their handler ignores the cancellation.
Nothing is lost on any exit.

Which queues and handlers:
  --queue NAME[:N] --handler TYPE   on the command line (N: concurrency), or
  PGBUS_QUEUES=a:5,b PGBUS_HANDLER=demo   in the environment, or
  queues: in the configuration file, each with handler: {type: ...}.
With --queue, a queue's handler comes from --handler, else from the file.
Handler types that take options (http's url, exec's command) are configured
in the file.

Queues declared in the configuration file are created when missing and get the
file's retry settings. Queues named only on the command line must exist
(pgbus queue create).

Built-in handler types: ` + strings.Join(handlers.Types(), ", ") + `
(demo: the flaky simulated downstream of pgbus demo).

--metrics-addr HOST:PORT serves Prometheus metrics at /metrics and the probes
/livez and /readyz (503 while the database does not answer or a queue it
works is STALLED) while working.`,
		Example: `  pgbus work --queue demo_orders --queue demo_emails:4 --handler demo
  pgbus work --config pgbus.yaml
  PGBUS_QUEUES=demo_orders PGBUS_HANDLER=demo pgbus work --until-idle
  pgbus work --config pgbus.yaml --for 10m --log-level debug
  pgbus work --config pgbus.yaml --metrics-addr :9187`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			queues, err := a.resolveWork(cmd.Flags(), &w)
			if err != nil {
				return err
			}
			return a.work(cmd.Context(), queues, w)
		},
	}
	w.add(cmd.Flags())
	return cmd
}

// resolveWork settles the queues, handlers and options of pgbus work in the
// order flag > environment > configuration file > default, and checks them
// all before anything starts.
func (a *app) resolveWork(fs *pflag.FlagSet, w *workFlags) ([]config.WorkQueue, error) {
	if err := a.resolve(fs, "handler", "", EnvHandler); err != nil {
		return nil, err
	}
	concurrency, err := a.resolveConcurrency(fs, &w.concurrency)
	if err != nil {
		return nil, err
	}
	if err := a.resolveTiming(fs, &w.timing); err != nil {
		return nil, err
	}
	if err := a.checkWorkFlags(fs, w); err != nil {
		return nil, err
	}
	if err := a.resolveMetricsAddr(fs, &w.metricsAddr); err != nil {
		return nil, err
	}
	specs, source, err := a.queueSpecs(w.queues)
	if err != nil {
		return nil, err
	}
	plan := config.WorkPlan{Specs: specs, Source: source, Handler: w.handler, HandlerFrom: a.from("handler"), Concurrency: concurrency}
	queues, err := a.cfg.WorkQueues(plan)
	if err != nil {
		return nil, usageError{err}
	}
	if len(queues) == 0 {
		return nil, usageError{errors.New("no queues to work: pass --queue NAME --handler demo, set " + EnvQueues + ", or list queues in a configuration file (--config)")}
	}
	if err := a.alertsReady(); err != nil {
		return nil, err
	}
	return queues, nil
}

// checkWorkFlags checks the ranges of pgbus work's settled options.
func (a *app) checkWorkFlags(fs *pflag.FlagSet, w *workFlags) error {
	if fs.Changed("for") {
		if err := checkDuration("for", w.runFor, time.Millisecond, 0, "it would stop before starting; leave --for out to work until SIGINT or SIGTERM"); err != nil {
			return err
		}
	}
	return nil
}

// addConcurrencyFlag adds --concurrency, of pgbus work and of pgbus serve's
// embedded workers.
func addConcurrencyFlag(f *pflag.FlagSet, n *int) {
	f.IntVar(n, "concurrency", 0, fmt.Sprintf("jobs of each queue run at once when --queue gives none (env %s, config queues.NAME.concurrency; default %d)", EnvConcurrency, config.DefaultConcurrency))
}

// resolveConcurrency settles --concurrency (flag > environment), whose
// value n points at, and checks its range. It returns the concurrency of
// every queue NAME:N does not set, or 0 when neither the flag nor the
// environment gives one: each queue's in the configuration file, else the
// default.
func (a *app) resolveConcurrency(fs *pflag.FlagSet, n *int) (int, error) {
	if err := a.resolve(fs, "concurrency", "", EnvConcurrency); err != nil {
		return 0, err
	}
	if a.sources["concurrency"] == "" {
		return 0, nil
	}
	if *n < 1 || *n > engine.MaxConcurrency {
		return 0, usageError{fmt.Errorf("%s %d%s is out of range 1..%d", a.setting("concurrency", "concurrency"), *n, a.from("concurrency"), engine.MaxConcurrency)}
	}
	return *n, nil
}

// queueSpecs returns the queues the command line names, else those of
// PGBUS_QUEUES, and where they came from, for errors. PGBUS_QUEUES set but
// empty is refused rather than read as unset, which would work every
// queue of the configuration file. PGBUS_QUEUES set beside --queue is
// left unused, as flags win over the environment, and the log says so:
// its queues would otherwise go unworked without a word.
func (a *app) queueSpecs(flags []string) (specs []string, source string, err error) {
	if v := os.Getenv(EnvQueues); len(flags) > 0 && strings.TrimSpace(v) != "" && a.log != nil {
		a.log.Warn("pgbus: --queue names the queues to work, so environment variable "+EnvQueues+" is unused (flags win over the environment): unset it, or leave --queue out to work its queues",
			"queues", strings.Join(flags, ","), "unused", EnvQueues+"="+v)
	}
	if len(flags) == 0 {
		if err := setButEmpty(EnvQueues); err != nil {
			return nil, "", err
		}
		if v := os.Getenv(EnvQueues); v != "" {
			return strings.Split(v, ","), "environment variable " + EnvQueues, nil
		}
	}
	return flags, "--queue", nil
}

// work runs pgbus work.
func (a *app) work(ctx context.Context, queues []config.WorkQueue, w workFlags) error {
	observers, err := a.tracing(ctx, slog.LevelInfo)
	if err != nil {
		return err
	}
	// --for counts from here: a database that does not answer at start
	// is waited for until then at most, not the minute pgbus work waits
	// without it.
	started := time.Now()
	a.waitForDB = longRunningWait
	a.poolInUse = true
	if w.runFor > 0 {
		a.waitForDB = min(a.waitForDB, w.runFor)
	}
	ctx, s, err := a.openMigrated(ctx)
	if err != nil {
		// The wait gives up at its last try before the deadline, at
		// most its longest delay (5s) before it.
		if w.runFor > 0 && w.runFor < longRunningWait && ops.ErrorKind(err) == ops.KindUnavailable && time.Until(started.Add(w.runFor)) < 5*time.Second {
			return reworded{fmt.Sprintf("the time given (--for %s) ran out before the database answered, so no work was done: %v", ops.FormatAge(w.runFor), err), err}
		}
		return err
	}
	defer s.Close()
	if err := runner.Check(s.db.Store, queues); err != nil {
		return err
	}
	if err := runner.Prepare(ctx, s.ops, queues, a.log); err != nil {
		var declared *runner.DeclaredQueueError
		if errors.As(err, &declared) && ops.ErrorKind(err) == ops.KindInvalid {
			// The file's queue block is what to change: say where it is.
			return usageError{a.cfg.Errorf("queues."+declared.Queue, "%v", declared.Err)}
		}
		return err
	}
	mon, stopMonitor, err := a.startMonitor(ctx, s.ops, w.metricsAddr, false, queues)
	if err != nil {
		return err
	}
	defer stopMonitor()
	stopAlerts, err := runner.StartAlerts(ctx, s.db.Store, s.ops, a.cfg.Alerts, a.log)
	if err != nil {
		return err
	}
	defer stopAlerts()
	jobs := runner.NewJobLog(a.log)
	cfg := a.engineConfig(w.timing)
	cfg.Logger, cfg.Observers = a.log, slices.Concat([]engine.Observer{jobs}, observers, mon.Observers())
	client, err := runner.NewClient(s.db.Store, queues, cfg)
	if err != nil {
		return err
	}
	mon.Runs(client.ID())
	return runner.Work(ctx, client, s.ops, queues, runner.WorkOptions{Where: s.db.Where(), For: w.runFor, Started: started, UntilIdle: w.untilIdle, Logger: a.log, Jobs: jobs, CommandFlags: a.carry})
}

// alertsReady checks, before anything starts, that the alerts a process
// with workers sends can be sent as the file configures them.
func (a *app) alertsReady() error {
	if a.cfg.Alerts.On() {
		if err := a.cfg.Alerts.Ready(); err != nil {
			return usageError{err}
		}
	}
	return nil
}
