package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Environment variables of pgbus work.
const (
	EnvQueues       = "PGBUS_QUEUES"
	EnvHandler      = "PGBUS_HANDLER"
	EnvConcurrency  = "PGBUS_CONCURRENCY"
	EnvPollInterval = "PGBUS_POLL_INTERVAL"
	EnvDrainTimeout = "PGBUS_DRAIN_TIMEOUT"
)

// DefaultConcurrency is how many jobs of a queue run at once when nothing
// says otherwise.
const DefaultConcurrency = 10

// workQueue is one queue a worker process works, with everything settled.
type workQueue struct {
	Name        string
	Concurrency int
	Handler     handlers.Spec
	// Settings are applied to the queue (created when missing) before work
	// starts; only queues declared in the configuration file have them.
	Settings config.Settings
	Declared bool
}

// workFlags are the options of pgbus work.
type workFlags struct {
	queues       []string
	handler      string
	concurrency  int
	pollInterval time.Duration
	drainTimeout time.Duration
	untilIdle    bool
	runFor       time.Duration
}

func (w *workFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&w.queues, "queue", nil, "work this queue, NAME or NAME:CONCURRENCY (repeatable; env "+EnvQueues+" as a comma list; default: the config file's queues)")
	f.StringVar(&w.handler, "handler", "", "handler type for the queues: "+strings.Join(handlers.Types(), ", ")+" (env "+EnvHandler+"; default: each queue's handler in the config file)")
	f.IntVar(&w.concurrency, "concurrency", 0, fmt.Sprintf("jobs of each queue run at once when --queue gives none (env %s, config queues.NAME.concurrency; default %d)", EnvConcurrency, DefaultConcurrency))
	f.DurationVar(&w.pollInterval, "poll-interval", time.Second, "how often an idle queue is read without a notification (env "+EnvPollInterval+", config worker.poll_interval)")
	f.DurationVar(&w.drainTimeout, "drain-timeout", 30*time.Second, "how long running jobs get to finish on SIGINT/SIGTERM (env "+EnvDrainTimeout+", config worker.drain_timeout)")
	f.BoolVar(&w.untilIdle, "until-idle", false, "stop once every worked queue is empty (nothing waiting, running or retrying)")
	f.DurationVar(&w.runFor, "for", 0, "stop after this long, e.g. 10m (default: until SIGINT/SIGTERM)")
}

func (a *app) workCommand() *cobra.Command {
	var w workFlags
	cmd := &cobra.Command{
		Use:   "work",
		Short: "Run workers: run jobs, retry failures, dead-letter what cannot succeed",
		Long: `Work queues in this process until SIGINT or SIGTERM (or --for, or
--until-idle): run each job with its queue's handler, retry failures with
backoff, dead-letter what cannot succeed. On a signal, fetching stops, running
jobs get --drain-timeout to finish, and the rest are left to their visibility
timeout: nothing is lost on any exit.

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

Built-in handler types: ` + strings.Join(handlers.Types(), ", ") + ` (demo: the flaky simulated downstream of pgbus demo).`,
		Example: `  pgbus work --queue demo_orders --queue demo_emails:4 --handler demo
  pgbus work --config pgbus.yaml
  PGBUS_QUEUES=demo_orders PGBUS_HANDLER=demo pgbus work --until-idle
  pgbus work --config pgbus.yaml --for 10m --log-level debug`,
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
func (a *app) resolveWork(fs *pflag.FlagSet, w *workFlags) ([]workQueue, error) {
	file := a.cfg
	fileDur := func(d *config.Duration) string {
		if d == nil {
			return ""
		}
		return d.String()
	}
	if err := a.resolve(fs, "poll-interval", fileDur(file.Worker.PollInterval), EnvPollInterval); err != nil {
		return nil, err
	}
	if err := a.resolve(fs, "drain-timeout", fileDur(file.Worker.DrainTimeout), EnvDrainTimeout); err != nil {
		return nil, err
	}
	if err := a.resolve(fs, "handler", "", EnvHandler); err != nil {
		return nil, err
	}
	if err := a.resolve(fs, "concurrency", "", EnvConcurrency); err != nil {
		return nil, err
	}
	if w.pollInterval < 10*time.Millisecond || w.pollInterval > time.Hour {
		return nil, usageError{fmt.Errorf("poll interval %s%s is out of range 10ms..1h", w.pollInterval, a.from("poll-interval"))}
	}
	if w.drainTimeout < 0 || w.drainTimeout > 24*time.Hour {
		return nil, usageError{fmt.Errorf("drain timeout %s%s is out of range 0..24h", w.drainTimeout, a.from("drain-timeout"))}
	}
	if err := checkDuration("for", w.runFor, 0); err != nil {
		return nil, err
	}
	if fs.Changed("concurrency") || a.sources["concurrency"] != "" {
		if w.concurrency < 1 || w.concurrency > engine.MaxConcurrency {
			return nil, usageError{fmt.Errorf("concurrency %d%s is out of range 1..%d", w.concurrency, a.from("concurrency"), engine.MaxConcurrency)}
		}
	}

	specs, source := w.queues, "--queue"
	if len(specs) == 0 {
		if v := os.Getenv(EnvQueues); v != "" {
			specs, source = strings.Split(v, ","), "environment variable "+EnvQueues
		}
	}
	queues, err := a.workQueues(specs, source, w)
	if err != nil {
		return nil, err
	}
	if len(queues) == 0 {
		return nil, usageError{errors.New("no queues to work: pass --queue NAME --handler demo, set " + EnvQueues + ", or list queues in a configuration file (--config)")}
	}
	return queues, nil
}

// workQueues settles the queues to work: those of specs (NAME or
// NAME:CONCURRENCY, from source, a flag or variable name for errors), or
// with no specs the configuration file's, each with its handler
// (w.handler, else the file's) checked. pgbus serve --work can use it too.
func (a *app) workQueues(specs []string, source string, w *workFlags) ([]workQueue, error) {
	file := a.cfg
	var out []workQueue
	if len(specs) > 0 {
		seen := map[string]bool{}
		for _, s := range specs {
			q, err := a.parseQueueSpec(strings.TrimSpace(s), source, w)
			if err != nil {
				return nil, err
			}
			if seen[q.Name] {
				return nil, usageError{fmt.Errorf("%s names queue %q twice; give it once", source, q.Name)}
			}
			seen[q.Name] = true
			out = append(out, q)
		}
	} else {
		for _, name := range file.QueueNames() {
			fq := file.Queues[name]
			q := workQueue{Name: name, Concurrency: a.concurrencyFor(fq, w), Settings: fq.Settings, Declared: true}
			if err := a.handlerFor(&q, fq, w); err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	for _, q := range out {
		if _, _, err := handlers.Build(q.Handler); err != nil {
			if w.handler != "" {
				return nil, usageError{fmt.Errorf("handler %q%s: %v", w.handler, a.from("handler"), err)}
			}
			return nil, usageError{file.Errorf("queues."+q.Name+".handler", "%v", err)}
		}
	}
	return out, nil
}

// parseQueueSpec reads NAME or NAME:CONCURRENCY.
func (a *app) parseQueueSpec(s, source string, w *workFlags) (workQueue, error) {
	name, conc, hasConc := strings.Cut(s, ":")
	if err := store.ValidateQueueName(name); err != nil {
		return workQueue{}, usageError{fmt.Errorf("%s %q: %w", source, s, err)}
	}
	fq, declared := a.cfg.Queue(name)
	q := workQueue{Name: name, Concurrency: a.concurrencyFor(fq, w), Settings: fq.Settings, Declared: declared}
	if hasConc {
		n, err := strconv.Atoi(conc)
		if err != nil || n < 1 || n > engine.MaxConcurrency {
			return workQueue{}, usageError{fmt.Errorf("%s %q: concurrency must be a whole number from 1 to %d, as in %s:10", source, s, engine.MaxConcurrency, name)}
		}
		q.Concurrency = n
	}
	return q, a.handlerFor(&q, fq, w)
}

func (a *app) concurrencyFor(fq config.Queue, w *workFlags) int {
	switch {
	case a.sources["concurrency"] != "":
		return w.concurrency
	case fq.Concurrency > 0:
		return fq.Concurrency
	}
	return DefaultConcurrency
}

func (a *app) handlerFor(q *workQueue, fq config.Queue, w *workFlags) error {
	switch {
	case w.handler != "":
		q.Handler = handlers.Spec{Type: w.handler}
	case fq.Handler != nil:
		q.Handler = *fq.Handler
	default:
		return usageError{fmt.Errorf("queue %s has no handler: pass --handler %s, or give it one in the configuration file (queues.%s.handler: {type: demo})",
			q.Name, handlers.TypeDemo, q.Name)}
	}
	return nil
}

// work runs pgbus work.
func (a *app) work(ctx context.Context, queues []workQueue, w workFlags) error {
	ctx, s, err := a.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	db := s.db
	if err := prepareQueues(ctx, s.ops, queues); err != nil {
		return err
	}
	client, err := a.newWorkers(db, queues, engine.Config{PollInterval: w.pollInterval, DrainTimeout: w.drainTimeout})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if w.runFor > 0 {
		var cancelFor context.CancelFunc
		runCtx, cancelFor = context.WithTimeout(runCtx, w.runFor)
		defer cancelFor()
	}
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = fmt.Sprintf("%s:%d(%s)", q.Name, q.Concurrency, q.Handler.Type)
	}
	a.log.Info("pgbus work: working", "queues", names, "where", db.Where(), "worker", client.ID())
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()
	if w.untilIdle {
		go func() {
			if err := a.waitIdle(runCtx, s.ops, queues, nil); err == nil {
				a.log.Info("pgbus work: every queue is empty; stopping (--until-idle)")
				stop()
			}
		}()
	}
	err = <-done
	if err != nil && !(errors.Is(err, context.Canceled) && runCtx.Err() != nil) {
		return err
	}
	// Stopped by a signal, --for or --until-idle, possibly while starting.
	a.log.Info("pgbus work: stopped")
	return nil
}

// prepareQueues creates the queues declared in the configuration file that
// are missing and stores the file's settings for them; the others must
// exist already (Client.Run says so).
func prepareQueues(ctx context.Context, svc *ops.Service, queues []workQueue) error {
	for _, q := range queues {
		if q.Declared {
			if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q.Name, Settings: settingsChange(q.Settings)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// newWorkers makes an engine client for the queues with their handlers.
func (a *app) newWorkers(db *database, queues []workQueue, cfg engine.Config) (*engine.Client, error) {
	cfg.Logger = a.log
	for _, q := range queues {
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: q.Name, Concurrency: q.Concurrency})
	}
	client, err := engine.NewClient(db.Store, cfg)
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		fn, opts, err := handlers.Build(q.Handler)
		if err != nil {
			return nil, usageError{err}
		}
		client.HandleQueue(q.Name, a.logJobs(fn), opts)
	}
	return client, nil
}

// logJobs logs every job's outcome at debug level.
func (a *app) logJobs(fn engine.HandlerFunc) engine.HandlerFunc {
	return func(ctx context.Context, job *engine.Job) error {
		start := time.Now()
		err := fn(ctx, job)
		if err != nil {
			a.log.Debug("pgbus: job failed", "queue", job.Queue, "msg_id", job.ID, "kind", job.Kind, "attempt", job.Attempt,
				"error_class", engine.ErrorClass(err), "err", err, "took", time.Since(start))
		} else {
			a.log.Debug("pgbus: job done", "queue", job.Queue, "msg_id", job.ID, "kind", job.Kind, "attempt", job.Attempt, "took", time.Since(start))
		}
		return err
	}
}

// waitIdle returns once every queue is empty (depth 0: nothing waiting,
// running or retrying), or ctx's error. progress, when set, is called with
// the stats at each look.
func (a *app) waitIdle(ctx context.Context, svc *ops.Service, queues []workQueue, progress func([]ops.QueueStats)) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		idle := true
		var all []ops.QueueStats
		for _, q := range queues {
			res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name})
			stats := res.Queues
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				a.log.Warn("pgbus: could not read queue stats; trying again", "queue", q.Name, "err", err)
				idle = false
				continue
			}
			all = append(all, stats...)
			for _, s := range stats {
				idle = idle && s.Depth == 0
			}
		}
		if progress != nil {
			progress(all)
		}
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
