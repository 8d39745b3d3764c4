// Package runner runs what a pgbus process keeps running: engine workers
// on the queues a plan settled (pgbus work, the demo, the embedded workers
// of pgbus serve), the MCP server of pgbus serve beside them or the
// dashboard alone (ServeDashboard), the alerts notifier (StartAlerts), the
// metrics registry and its probes (NewMonitor) and tracing (Tracing). Front
// ends settle the queues through config.File.WorkQueues, from a
// config.WorkPlan, and pass the []config.WorkQueue it gives, or an
// MCPConfig for a server.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/startwait"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// SettingsChange turns configuration settings (from flags and the file)
// into a change of the operations layer.
func SettingsChange(c config.Settings) ops.SettingsChange {
	dur := func(d *config.Duration) *time.Duration {
		if d == nil {
			return nil
		}
		v := d.D()
		return &v
	}
	out := ops.SettingsChange{MaxRetries: c.MaxRetries, VisibilityTimeout: dur(c.VisibilityTimeout), Backoff: dur(c.Backoff),
		BackoffMax: dur(c.BackoffMax), Jitter: c.Jitter, DeleteOnSuccess: c.DeleteOnSuccess,
		ArchiveRetention: dur(c.ArchiveRetention), DeadRetention: dur(c.DeadRetention)}
	if c.Strategy != "" {
		out.Strategy = &c.Strategy
	}
	return out
}

// DeclaredQueueError is the refusal of a queue the configuration file
// declares, for a caller that knows the file to say where it is.
type DeclaredQueueError struct {
	Queue string
	Err   error
}

func (e *DeclaredQueueError) Error() string { return e.Err.Error() }
func (e *DeclaredQueueError) Unwrap() error { return e.Err }

// Prepare creates the queues declared in the configuration file that are
// missing and stores the file's settings for them; the others must exist
// already, and one that does not is an error whose next step creates it.
// A setting the file leaves out keeps its stored value: log names those
// that differ from the default, so that a key dropped from the file is not
// taken for a return to the default.
//
// A database that does not answer (down or restarting, a connection cut)
// is waited for as the workers' start waits for it (startwait.Wait):
// Prepare tries again every few seconds, warning once, until it answers
// or ctx ends, when it returns an error wrapping ctx's; errors no wait
// mends end it at once.
func Prepare(ctx context.Context, svc *ops.Service, queues []config.WorkQueue, log *slog.Logger) error {
	log = orDiscard(log)
	wait := startwait.New(log, svc.SlowRead, svc.HasConnected)
	for _, q := range queues {
		if q.Declared {
			var res ops.QueueCreated
			err := wait.Do(ctx, func(ctx context.Context) (err error) {
				res, err = svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q.Name, Settings: SettingsChange(q.Settings)})
				return err
			})
			if err != nil {
				return &DeclaredQueueError{Queue: q.Name, Err: err}
			}
			if res.Changed && !res.Created {
				// Said, since every process working the queue takes them:
				// two files that declare it differently take turns.
				log.Info("pgbus: queue settings changed to the configuration file's; every process working the queue takes them within seconds",
					"queue", q.Name, "max_retries", res.Settings.MaxRetries, "backoff_seconds", res.Settings.RetryBackoffSeconds, "backoff_max_seconds", res.Settings.RetryBackoffMaxSeconds, "visibility_timeout_seconds", res.Settings.VisibilityTimeoutSeconds)
			}
			if len(res.Kept) > 0 {
				log.Info("pgbus: queue keeps settings set before that the configuration file does not give; give them in its queue block to change them",
					"queue", q.Name, "kept", strings.Join(res.Kept, "; "))
			}
			continue
		}
		// Any other error (a table the role may not read) is the
		// workers' to report, in their own words; a database that does
		// not answer, theirs to wait for as they start.
		if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name, NoArchive: true}); errors.Is(err, ops.ErrNotFound) {
			return &ops.Error{Err: ops.ErrNotFound,
				Msg:   fmt.Sprintf("queue %q does not exist; workers create only the queues the configuration file declares", q.Name),
				Hints: []ops.Hint{{Op: ops.OpQueueCreate, Args: map[string]any{"queue": q.Name}, Why: "creates it with the default retry settings"}}}
		}
	}
	return nil
}

// Check refuses, before anything is written, what workers of queues would
// refuse as they start (engine.Client.Validate): handlers that name one
// circuit breaker with different settings among them. Prepare writes (a
// declared queue's settings); a refusal after it would leave them changed.
func Check(st *store.Store, queues []config.WorkQueue) error {
	client, err := NewClient(st, queues, engine.Config{})
	if err != nil {
		return err
	}
	return client.Validate()
}

// NewClient makes an engine client that works the queues with their
// handlers, logging every job's outcome to cfg.Logger at debug level.
func NewClient(st *store.Store, queues []config.WorkQueue, cfg engine.Config) (*engine.Client, error) {
	cfg.Logger = orDiscard(cfg.Logger)
	for _, q := range queues {
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: q.Name, Concurrency: q.Concurrency})
	}
	client, err := engine.NewClient(st, cfg)
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		fn, opts, err := handlers.Build(q.Handler)
		if err != nil {
			return nil, err
		}
		client.HandleQueue(q.Name, logJobs(cfg.Logger, fn), opts)
	}
	return client, nil
}

// logJobs logs every job's outcome at debug level.
func logJobs(log *slog.Logger, fn engine.HandlerFunc) engine.HandlerFunc {
	return func(ctx context.Context, job *engine.Job) error {
		start := time.Now()
		err := fn(ctx, job)
		if err != nil {
			log.Debug("pgbus: job failed", "queue", job.Queue, "msg_id", job.ID, "kind", job.Kind, "attempt", job.Attempt,
				"error_class", engine.ErrorClass(err), "err", err, "took", time.Since(start))
		} else {
			log.Debug("pgbus: job done", "queue", job.Queue, "msg_id", job.ID, "kind", job.Kind, "attempt", job.Attempt, "took", time.Since(start))
		}
		return err
	}
}

// WorkOptions say what Work logs and when it stops, besides its context
// ending.
type WorkOptions struct {
	// Where names the database in the log, without credentials.
	Where string
	// For stops the workers after this long, counted from Started; 0
	// does not.
	For time.Duration
	// Started is when For counts from: the command's start, its wait for
	// the database included; zero for the call to Work.
	Started time.Time
	// UntilIdle stops them once no work is left (see WaitIdle).
	UntilIdle bool
	Logger    *slog.Logger
	// Jobs, when set (and among the client's observers), logs a line per
	// queue every SummaryEvery (DefaultSummaryEvery when 0) while work
	// happens, and a summary of the run when the workers stop.
	Jobs         *JobLog
	SummaryEvery time.Duration
	// CommandFlags are the global flags the commands the log names keep
	// (see WaitIdle).
	CommandFlags string
}

// Work runs client on queues until ctx ends, opts.For passes or, with
// opts.UntilIdle, every queue is empty. Stopping so is no error, even
// while the workers were starting, but for opts.For passing before the
// queues were idle when opts.UntilIdle asked for both (ErrNotIdle).
func Work(ctx context.Context, client *engine.Client, svc *ops.Service, queues []config.WorkQueue, opts WorkOptions) error {
	log := orDiscard(opts.Logger)
	runCtx, stop := context.WithCancel(ctx)
	if opts.For > 0 {
		start := opts.Started
		if start.IsZero() {
			start = time.Now()
		}
		var cancelFor context.CancelFunc
		runCtx, cancelFor = context.WithDeadline(runCtx, start.Add(opts.For))
		defer cancelFor()
	}
	log.Info("pgbus work: starting", "queues", describe(queues), "where", opts.Where, "worker", client.ID(), "version", buildinfo.Describe())
	var watcher sync.WaitGroup
	// Waited for before returning, so that nothing reads the database the
	// caller closes next.
	defer watcher.Wait()
	defer stop()
	var idle atomic.Bool
	if opts.UntilIdle {
		watcher.Go(func() {
			if err := WaitIdle(runCtx, svc, queues, log, opts.CommandFlags, nil); err == nil {
				idle.Store(true)
				log.Info("pgbus work: no work left, every queue empty or paused; stopping (--until-idle)")
				stop()
			}
		})
	}
	if opts.Jobs != nil {
		watcher.Go(func() { opts.Jobs.Run(runCtx, opts.SummaryEvery) })
	}
	if err := client.Run(runCtx); err != nil && !(errors.Is(err, context.Canceled) && runCtx.Err() != nil) {
		return err
	}
	if opts.Jobs != nil {
		opts.Jobs.Summary(queueNames(queues))
	}
	log.Info("pgbus work: stopped", "worker", client.ID())
	if opts.UntilIdle && opts.For > 0 && ctx.Err() == nil && !idle.Load() && !idleNow(ctx, svc, queues, log) {
		// A script's "work --until-idle --for 10m && next" must not take
		// the time running out for the queues drained.
		return &ops.Error{Err: ErrNotIdle, Msg: fmt.Sprintf("the time given (%s) ran out with work left: the queues were not idle (nothing is lost: what is left waits in them)", opts.For),
			Hints: []ops.Hint{{Op: ops.OpQueueStats, Why: "shows what is left"}}}
	}
	return nil
}

// idleNow reports whether the queues are idle now, as WaitIdle would say
// at its next look: the jobs the stop let finish may have been the last.
func idleNow(ctx context.Context, svc *ops.Service, queues []config.WorkQueue, log *slog.Logger) bool {
	_, idle, err := looker{svc: svc, log: log, failing: map[string]string{}}.look(ctx, queues)
	return err == nil && idle
}

// ErrNotIdle is wrapped by Work's error when it was to stop once the queues
// were idle and its time (WorkOptions.For) ran out first: work is left.
var ErrNotIdle = errors.New("not idle")

func queueNames(queues []config.WorkQueue) []string {
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = q.Name
	}
	return names
}

// describe names each queue with its handler type and concurrency, for
// the log. No colon or equals sign follows the name: the log hides what
// follows a secret-looking key, and a queue may well be named
// refresh_token or client_secret.
func describe(queues []config.WorkQueue) []string {
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = fmt.Sprintf("%s (%s, concurrency %d)", q.Name, q.Handler.Type, q.Concurrency)
	}
	return names
}

// Background prepares the queues and runs workers on them until the
// function it returns is called, which stops them and waits; with no
// queues it runs nothing. A database that does not answer, as they start
// or later, stops them not: they wait for it (engine.Client.Run). Workers
// that stop on an error before then are
// logged once and told to svc (ops.Service.WorkersStopped), whose health
// verdict, and that of every service given the same ops.OwnWorkers, is
// STALLED from then on. The workers outlive ctx's cancellation, so that
// the caller decides when they stop: after what it serves beside them.
// mon, when given, is the process's monitor, whose /readyz counts these
// workers running whatever their heartbeats say (Monitor.Runs).
// observers, when given, watch the workers' jobs (see Tracing; metrics
// count them).
func Background(ctx context.Context, st *store.Store, svc *ops.Service, queues []config.WorkQueue, cfg engine.Config, log *slog.Logger, mon *Monitor, observers ...engine.Observer) (stop func(), err error) {
	if len(queues) == 0 {
		return func() {}, nil
	}
	log = orDiscard(log)
	if err := Check(st, queues); err != nil {
		return nil, err
	}
	if err := Prepare(ctx, svc, queues, log); err != nil {
		return nil, err
	}
	jobs := NewJobLog(log)
	cfg.Logger, cfg.Observers = log, append([]engine.Observer{jobs}, observers...)
	client, err := NewClient(st, queues, cfg)
	if err != nil {
		return nil, err
	}
	// Run's refusals would only be logged from its goroutine.
	if err := client.Validate(); err != nil {
		return nil, err
	}
	mon.Runs(client.ID())
	log.Info("pgbus serve: embedded workers", "queues", len(queues), "worker", client.ID())
	workCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var workers sync.WaitGroup
	workers.Go(func() { jobs.Run(workCtx, 0) })
	workers.Go(func() {
		if err := client.Run(workCtx); err != nil && !errors.Is(err, context.Canceled) {
			// Told to the health verdict before the log, so that whoever
			// reads the line finds the verdict says it too. Run rides out
			// a database that does not answer: this is an error no wait
			// mends, and the workers are not started again.
			why := svc.WorkersStopped(queueNames(queues), err)
			log.Error("pgbus serve: embedded workers stopped on an error; the server goes on answering, but runs no job until it restarts, and its health and readiness say so", "queues", queueNames(queues), "err", why.Message)
		}
		jobs.Summary(queueNames(queues))
	})
	return func() {
		cancel()
		workers.Wait()
	}, nil
}

// WaitIdle returns once every queue is empty (depth 0: nothing waiting,
// running or retrying), or ctx's error. A paused queue counts as empty
// once nothing of it runs: what waits in it waits for a resume, not for
// these workers, and is logged once. So does a queue dropped meanwhile:
// nothing of it is left to wait for. progress, when set, is called with
// the stats at each look. flags are the global flags the command that
// resumes a paused queue keeps in the log, as the command line gave them
// (" --config pgbus.yaml"): without them it would name another database.
func WaitIdle(ctx context.Context, svc *ops.Service, queues []config.WorkQueue, log *slog.Logger, flags string, progress func([]ops.QueueStats)) error {
	log = orDiscard(log)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	told := map[string]bool{}
	l := looker{svc: svc, log: log, failing: map[string]string{}}
	for {
		all, idle, err := l.look(ctx, queues)
		if err != nil {
			return err
		}
		for _, s := range all {
			if s.Paused && s.Depth > 0 && !told[s.Queue] {
				told[s.Queue] = true
				resume := vocab.WithFlags(vocab.Command(ops.Hint{Op: ops.OpQueueResume, Args: map[string]any{"queue": s.Queue}}), flags)
				log.Warn("pgbus: queue is paused: its messages wait until it is resumed, and idle does not wait for them",
					"queue", s.Queue, "messages", s.Depth, "next", resume)
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

// looker reads the stats of the queues WaitIdle waits for, and logs a
// queue it cannot read once, not at each look, until it reads again.
type looker struct {
	svc *ops.Service
	log *slog.Logger
	// failing holds, for each queue that could not be read at the last
	// look, why: the error, or "dropped".
	failing map[string]string
}

// look reads the stats of the queues once and says whether all are empty.
// A queue whose stats cannot be read counts as busy, unless ctx ended; a
// queue that is gone counts as empty. Several queues are read in one call
// of every queue's stats: one call each, looked at every 100ms, made a
// thousand queries a look for a thousand queues, and a run of them took
// half a minute to see them idle.
func (l looker) look(ctx context.Context, queues []config.WorkQueue) (all []ops.QueueStats, idle bool, err error) {
	req := ops.QueueStatsRequest{All: true, NoArchive: true}
	if len(queues) == 1 {
		req.Queue = queues[0].Name
	}
	res, err := l.svc.QueueStats(ctx, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, false, ctx.Err()
	case err != nil && !(len(queues) == 1 && errors.Is(err, ops.ErrNotFound)):
		if why := err.Error(); l.failing[""] != why {
			l.failing[""] = why
			l.log.Warn("pgbus: could not read queue stats; trying again", "queues", queueNames(queues), "err", err)
		}
		return nil, false, nil
	case l.failing[""] != "":
		delete(l.failing, "")
		l.log.Info("pgbus: queue stats read again")
	}
	byName := map[string][]ops.QueueStats{}
	for _, st := range res.Queues {
		byName[st.Queue] = append(byName[st.Queue], st)
	}
	idle = true
	for _, q := range queues {
		stats, ok := byName[q.Name]
		if !ok {
			if l.failing[q.Name] != "dropped" {
				l.failing[q.Name] = "dropped"
				l.log.Warn("pgbus: queue was dropped: nothing of it is left to wait for, so idle does not wait for it", "queue", q.Name)
			}
			continue
		}
		if l.failing[q.Name] != "" {
			delete(l.failing, q.Name)
			l.log.Info("pgbus: queue is there again", "queue", q.Name)
		}
		all = append(all, stats...)
		for _, s := range stats {
			idle = idle && (s.Depth == 0 || s.Paused && s.InFlight == 0)
		}
	}
	return all, idle, nil
}

// orDiscard returns log, or a logger that discards when it is nil.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
