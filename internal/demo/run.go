package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Options tune Run.
type Options struct {
	// Timeout bounds the wait for the jobs to settle (pgbus demo's default
	// is two minutes); zero gives up at once.
	Timeout time.Duration
	Logger  *slog.Logger
	// AuditRetention is the workers' engine.Config.AuditRetention: the
	// demo's workers run retention like any.
	AuditRetention time.Duration
	// StatsRetention is the workers' engine.Config.StatsRetention.
	StatsRetention time.Duration
	// DatabaseCallTimeout is the workers' engine.Config.DatabaseCallTimeout;
	// zero takes the engine's default.
	DatabaseCallTimeout time.Duration
	// Sent is called once the jobs are sent, with how many went to each
	// queue, before any is worked.
	Sent func(perQueue map[string]int, total int)
	// Progress is called as jobs settle, with how many have of total.
	Progress func(settled, total int)
	// Observers are the workers' engine.Config.Observers: tracing, when
	// it is on, follows the demo's jobs as any worker's.
	Observers []engine.Observer
	// CommandFlags are the global flags the commands its log names keep
	// (runner.WaitIdle).
	CommandFlags string
}

// Report is what a run of the demo did.
type Report struct {
	// Jobs is how many were sent; Succeeded and DeadLettered how they
	// ended.
	Jobs                    int
	Succeeded, DeadLettered int64
	// Queues are the stats of the demo's queues at the end.
	Queues []ops.QueueStats
	// Dead groups the dead messages of the demo's queues.
	Dead ops.DLQSummary
}

// queues are the demo's queues as workers run them.
func queues() []config.WorkQueue {
	return []config.WorkQueue{
		{Name: Orders, Concurrency: 8, Handler: Handler(), Settings: Settings()},
		{Name: Emails, Concurrency: 8, Handler: Handler(), Settings: Settings()},
	}
}

// ErrRunning is the error of Run when another run of the demo is under way
// on the same database.
var ErrRunning = errors.New("another pgbus demo is running on this database, and a second one would drop its queues under it: wait for it to finish (it takes a few seconds), then run pgbus demo again")

// Stopped says what is left of a demo stopped before it finished, and what
// running it again does: it starts over, since setUp drops and recreates
// its queues, rather than finish what was left.
const Stopped = "the demo was stopped by a signal before finishing; its queues " + Orders + " and " + Emails +
	" keep what it did so far (pgbus queues shows them): pgbus demo runs it again from the start, dropping and recreating them"

// Run runs the demo on st through svc: it recreates the demo's queues,
// sends the jobs of Messages, works them until every one has settled
// (succeeded or dead-lettered) and reports how they ended. One run at a
// time works a database: while another is under way, Run returns
// ErrRunning and changes nothing.
func Run(ctx context.Context, st *store.Store, svc *ops.Service, opts Options) (Report, error) {
	lease, err := st.TryLead(ctx, store.ElectionDemo)
	if err != nil {
		return Report{}, err
	}
	if lease == nil {
		return Report{}, ErrRunning
	}
	defer lease.Release(ctx)
	total, err := setUp(ctx, svc, opts)
	if err != nil {
		return Report{}, err
	}
	if err := work(ctx, st, svc, total, opts); err != nil {
		return Report{}, err
	}
	return report(ctx, svc, total)
}

// setUp recreates the demo's queues, so that every run starts afresh, and
// sends the jobs.
func setUp(ctx context.Context, svc *ops.Service, opts Options) (total int, err error) {
	for _, q := range queues() {
		if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name}); err == nil {
			if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q.Name, Confirm: true}); err != nil && !errors.Is(err, store.ErrNotFound) {
				return 0, err
			}
		}
		if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q.Name, Settings: runner.SettingsChange(q.Settings)}); err != nil {
			return 0, err
		}
	}
	msgs, total, err := Messages(time.Now())
	if err != nil {
		return 0, err
	}
	perQueue := map[string]int{}
	for _, q := range queues() {
		if _, err := svc.SendBatch(ctx, q.Name, msgs[q.Name]); err != nil {
			return 0, err
		}
		perQueue[q.Name] = len(msgs[q.Name])
	}
	if opts.Sent != nil {
		opts.Sent(perQueue, total)
	}
	return total, nil
}

// work runs workers until every job has settled, or the timeout.
func work(ctx context.Context, st *store.Store, svc *ops.Service, total int, opts Options) error {
	client, err := runner.NewClient(st, queues(), engine.Config{PollInterval: 100 * time.Millisecond, DrainTimeout: 5 * time.Second, Logger: opts.Logger,
		AuditRetention: opts.AuditRetention, StatsRetention: opts.StatsRetention, DatabaseCallTimeout: opts.DatabaseCallTimeout, Observers: opts.Observers})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()
	waitCtx, cancelWait := context.WithTimeout(runCtx, opts.Timeout)
	waitErr := runner.WaitIdle(waitCtx, svc, queues(), opts.Logger, opts.CommandFlags, func(stats []ops.QueueStats) {
		if opts.Progress != nil {
			opts.Progress(max(total-pending(stats), 0), total)
		}
	})
	cancelWait()
	stop()
	if err := <-done; err != nil {
		return err
	}
	if waitErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("demo: the jobs did not settle within %s; see pgbus queues", opts.Timeout)
	}
	return nil
}

// pending counts the jobs not done yet: those still in the queues, the
// demo's queues being new, with every job sent before the wait.
func pending(stats []ops.QueueStats) int {
	n := 0
	for _, s := range stats {
		n += int(s.Depth)
	}
	return n
}

// report reads how the jobs ended.
func report(ctx context.Context, svc *ops.Service, total int) (Report, error) {
	r := Report{Jobs: total}
	for _, q := range queues() {
		res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name})
		if err != nil {
			return Report{}, err
		}
		r.Queues = append(r.Queues, res.Queues...)
	}
	for _, st := range r.Queues {
		r.Succeeded += st.Archived
		r.DeadLettered += st.DLQDepth
	}
	dead, err := ownSummary(ctx, svc)
	if err != nil {
		return Report{}, err
	}
	r.Dead = dead
	return r, nil
}

// ownSummary is the dead-letter summary of the demo's queues alone, asked
// of each, their groups merged largest first: a summary of every queue
// lists only the largest groups (store.MaxDeadGroups), which on a busy
// database may all be other queues'.
func ownSummary(ctx context.Context, svc *ops.Service) (ops.DLQSummary, error) {
	out := ops.DLQSummary{Groups: []ops.DeadGroup{}, Notes: []string{}, Next: []ops.Hint{}}
	for _, q := range queues() {
		sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q.Name}, All: true})
		if err != nil {
			return ops.DLQSummary{}, err
		}
		out.Groups = append(out.Groups, sum.Groups...)
		out.Total += sum.Total
		out.TotalGroups += sum.TotalGroups
		out.Truncated = out.Truncated || sum.Truncated
		for _, n := range sum.Notes {
			if !slices.Contains(out.Notes, n) {
				out.Notes = append(out.Notes, n)
			}
		}
	}
	slices.SortStableFunc(out.Groups, func(a, b ops.DeadGroup) int { return cmp.Compare(b.Count, a.Count) })
	return out, nil
}
