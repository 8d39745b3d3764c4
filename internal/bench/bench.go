// Package bench measures pgbus's engine on a real PostgreSQL: the
// workloads behind `pgbus bench`. Each run uses a fresh queue and drops it
// afterwards.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// Workloads of Run.
const (
	Drain  = "drain"
	Retry  = "retry"
	Dead   = "dead"
	Steady = "steady"
	// Ceiling drains the queue without workers: CeilingConnections
	// connections each run store.ClaimArchive of CeilingBatch messages in
	// a loop until it is empty. It is the database's own rate for the
	// least work a drain does, to judge drain's rate against on the same
	// backlog.
	Ceiling = "ceiling"
)

// The shape of the ceiling workload.
const (
	CeilingConnections = 8
	CeilingBatch       = 100
)

// Workloads lists the workload names.
var Workloads = []string{Drain, Retry, Dead, Steady, Ceiling}

// Options configure one run.
type Options struct {
	Workload string
	// Jobs is how many jobs drain, retry and dead work. Default 20,000,
	// or Backlog when that is set.
	Jobs int
	// Backlog, when set, is how many jobs wait in the queue before the
	// workers start, written by the database in bulk (store.BulkSend)
	// instead of sent in batches, so that a backlog of a million is
	// queued in seconds. It stands for Jobs; drain, retry and dead only.
	Backlog int
	// Workers is the queue's concurrency over all processes. Default 100.
	Workers int
	// Processes is how many processes work the queue. 1, the default,
	// works it in this process; more start that many worker processes
	// with Spawn (drain, retry and dead only), Workers spread evenly over
	// them, so that one process of 100 workers can be compared with two
	// of 50 or four of 25.
	Processes int
	// Spawn makes the command of one worker process, which must run Work
	// with the spec on the same database, its standard input and output
	// connected to this process. Run starts and stops the command.
	Spawn func(ctx context.Context, spec WorkerSpec) *exec.Cmd
	// ChildStderr receives the worker processes' standard error (their
	// logs); nil keeps only the end of it, for errors.
	ChildStderr io.Writer
	// Rate (jobs/s) and Duration shape the steady workload. Defaults
	// 2,000/s for 10s.
	Rate     int
	Duration time.Duration
	Logger   *slog.Logger
}

// Limits of Options.
const (
	MaxJobs      = 10_000_000
	MaxProcesses = 64
	MaxRate      = 1_000_000
	MinDuration  = time.Second
	MaxDuration  = time.Hour
)

func (o Options) withDefaults() Options {
	if o.Jobs == 0 && o.Backlog > 0 {
		o.Jobs = o.Backlog
	}
	if o.Jobs == 0 {
		o.Jobs = 20_000
	}
	if o.Workers == 0 {
		o.Workers = 100
	}
	if o.Processes == 0 {
		o.Processes = 1
	}
	if o.Rate == 0 {
		o.Rate = 2000
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate checks the options as Run takes them, defaults applied.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case !slices.Contains(Workloads, o.Workload):
		return fmt.Errorf("%w: workload %q: use one of %v", store.ErrInvalid, o.Workload, Workloads)
	case o.Jobs < 1 || o.Jobs > MaxJobs:
		return fmt.Errorf("%w: jobs %d is out of range 1..10,000,000", store.ErrInvalid, o.Jobs)
	case o.Backlog < 0 || o.Backlog > MaxJobs:
		return fmt.Errorf("%w: backlog %d is out of range 1..10,000,000", store.ErrInvalid, o.Backlog)
	case o.Backlog > 0 && o.Jobs != o.Backlog:
		return fmt.Errorf("%w: jobs %d and backlog %d both set how many jobs run: set one", store.ErrInvalid, o.Jobs, o.Backlog)
	case o.Backlog > 0 && o.Workload == Steady:
		return fmt.Errorf("%w: backlog is for drain, retry and dead; steady sends as it goes (use rate and duration)", store.ErrInvalid)
	case o.Workers < 1 || o.Workers > engine.MaxConcurrency:
		return fmt.Errorf("%w: workers %d is out of range 1..%d", store.ErrInvalid, o.Workers, engine.MaxConcurrency)
	case o.Processes < 1 || o.Processes > MaxProcesses:
		return fmt.Errorf("%w: processes %d is out of range 1..%d", store.ErrInvalid, o.Processes, MaxProcesses)
	case o.Processes > o.Workers:
		return fmt.Errorf("%w: %d processes need at least one worker each, and workers is %d: raise workers or lower processes", store.ErrInvalid, o.Processes, o.Workers)
	case o.Processes > 1 && (o.Workload == Steady || o.Workload == Ceiling):
		return fmt.Errorf("%w: processes is for drain, retry and dead; %s runs in one process", store.ErrInvalid, o.Workload)
	case o.Processes > 1 && o.Spawn == nil:
		return fmt.Errorf("%w: %d processes need Spawn to start the worker processes", store.ErrInvalid, o.Processes)
	case o.Rate < 1 || o.Rate > MaxRate:
		return fmt.Errorf("%w: rate %d is out of range 1..1,000,000 jobs/s", store.ErrInvalid, o.Rate)
	case o.Duration < MinDuration || o.Duration > MaxDuration:
		return fmt.Errorf("%w: duration %s is out of range 1s..1h", store.ErrInvalid, o.Duration)
	}
	return nil
}

// Result is one run, printed as one JSON line.
type Result struct {
	Workload  string `json:"workload"`
	Jobs      int    `json:"jobs"`
	Workers   int    `json:"workers"`
	Processes int    `json:"processes"`
	// Backlog and FillSeconds: the jobs queued in bulk before the workers
	// started, and how long that took (not part of Seconds).
	Backlog       int     `json:"backlog,omitempty"`
	FillSeconds   float64 `json:"fill_seconds,omitempty"`
	Seconds       float64 `json:"seconds"`
	JobsPerSecond float64 `json:"jobs_per_second"`
	// The rate at the end of a drain, retry or dead run: over its last
	// tenth of jobs, or a little more (EndJobs), as the progress was
	// sampled. A queue that slows as it drains shows it here.
	EndJobs          int     `json:"end_jobs,omitempty"`
	EndSeconds       float64 `json:"end_seconds,omitempty"`
	EndJobsPerSecond float64 `json:"end_jobs_per_second,omitempty"`
	// Steady only.
	Rate           int      `json:"rate,omitempty"`
	LatencyP50MS   *float64 `json:"latency_p50_ms,omitempty"`
	LatencyP95MS   *float64 `json:"latency_p95_ms,omitempty"`
	LatencyP99MS   *float64 `json:"latency_p99_ms,omitempty"`
	MaxBacklog     *int64   `json:"max_backlog,omitempty"`
	BacklogBounded *bool    `json:"backlog_bounded,omitempty"`
	// Tables are the queue's table, archive and DLQ at the end of the run:
	// dead tuples and sizes. StatsLagging says the server's statistics
	// had not yet counted every write of the run when they were read.
	Tables       []store.TableStats `json:"tables"`
	StatsLagging bool               `json:"stats_lagging,omitempty"`
	// ShrunkSeconds is how long after the drain the workers, seeing the
	// queue quiet, had truncated its emptied table; 0 when that had not
	// happened 10 seconds on (runs where each process settles fewer jobs
	// than its vacuum interval are not waited for).
	ShrunkSeconds float64 `json:"shrunk_seconds,omitempty"`
}

// waitShrunk waits, with the workers still running, until queue's table
// holds no page, for at most shrinkWait after end, and says how long after
// end that was (0: not within the wait).
func waitShrunk(ctx context.Context, st *store.Store, queue string, end time.Time) (float64, error) {
	for {
		stats, err := st.QueueTableStats(ctx, queue)
		if err != nil {
			return 0, fmt.Errorf("bench: read the queue table's size after the drain: %w", err)
		}
		if stats[0].TableBytes == 0 {
			return time.Since(end).Seconds(), nil
		}
		if time.Since(end) > shrinkWait {
			return 0, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// shrinkWait bounds waitShrunk: the workers look at their queues once a
// second and shrink one that went quiet.
const shrinkWait = 10 * time.Second

// Run runs one workload on a fresh queue, then reads its tables'
// statistics and drops it.
func Run(ctx context.Context, st *store.Store, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	queue, err := freshQueue(ctx, st, opts.Workload)
	if err != nil {
		return Result{}, err
	}
	defer dropQueues(ctx, st, []string{queue})
	// The run writes through a pool of its own, closed before the tables'
	// statistics are read: a server process reports its counts when it
	// exits, where an idle one may keep them up to 10 seconds.
	work, closeWork, err := ownPool(ctx, st)
	if err != nil {
		return Result{}, err
	}
	defer closeWork()
	var res Result
	if opts.Workload == Steady {
		res, err = runSteady(ctx, work, queue, opts)
	} else {
		res, err = runBatch(ctx, work, queue, opts)
	}
	if err != nil {
		return res, err
	}
	closeWork()
	res.Tables, res.StatsLagging, err = tableStats(ctx, st, queue, res.Jobs)
	return res, err
}

// dropQueues drops the queues a run made, and then the registry rows of
// the workers that worked only those queues, all of them the run's own
// (in this process or in worker processes it started), which pgbus
// workers would otherwise list as stopped for a day. Names left empty are
// skipped. It runs even once ctx is done; what it cannot drop a run's
// result does not depend on, so its errors are not reported.
func dropQueues(ctx context.Context, st *store.Store, queues []string) {
	ctx = context.WithoutCancel(ctx)
	made := slices.DeleteFunc(slices.Clone(queues), func(q string) bool { return q == "" })
	for _, q := range made {
		_ = st.DropQueue(ctx, q)
	}
	_, _ = st.ForgetWorkersOf(ctx, made)
}

// ownPool opens a store on st's database with a pool of its own, whose
// sessions carry st's application_name, or returns st itself when its
// pool was not made from a URL.
func ownPool(ctx context.Context, st *store.Store) (*store.Store, func(), error) {
	cfg := st.Pool().Config()
	url := cfg.ConnString()
	if url == "" {
		return st, func() {}, nil
	}
	own, err := store.OpenAs(ctx, url, cfg.ConnConfig.RuntimeParams["application_name"])
	if err != nil {
		return nil, nil, fmt.Errorf("bench: open a pool for the run: %w", err)
	}
	var once sync.Once
	return own, func() { once.Do(own.Close) }, nil
}

// tableStats reads the statistics of queue's tables once they count the
// run's writes: every job inserted into the queue, deleted from it and
// inserted into the archive or the DLQ. Server processes report their
// counts when they exit, or when idle about once a second, or up to 10
// seconds if they reported a moment before; after 15 seconds the figures
// are taken as they are, and lagging says so.
func tableStats(ctx context.Context, st *store.Store, queue string, jobs int) (stats []store.TableStats, lagging bool, err error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		stats, err = st.QueueTableStats(ctx, queue)
		if err != nil {
			return nil, false, fmt.Errorf("bench: read the table statistics at the end of the run: %w", err)
		}
		q, a, dlq := stats[0], stats[1], stats[2]
		n := int64(jobs)
		if q.Inserted >= n && q.Deleted >= n && a.Inserted+dlq.Inserted >= n {
			return stats, false, nil
		}
		if time.Now().After(deadline) {
			return stats, true, nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freshQueue(ctx context.Context, st *store.Store, workload string) (string, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	queue := "bench_" + workload + "_" + hex.EncodeToString(b)
	if err := st.CreateQueue(ctx, queue); err != nil {
		return "", err
	}
	set := store.DefaultQueueSettings(queue)
	set.RetryBackoff, set.RetryBackoffMax = 0, 0
	if workload == Dead {
		set.MaxRetries = 3
	}
	return queue, st.SetQueueSettings(ctx, set)
}

// runBatch queues every job up front, then times the workers from their
// start until every job is done and the queue is empty: all archived, or
// for dead all dead-lettered.
func runBatch(ctx context.Context, st *store.Store, queue string, opts Options) (Result, error) {
	res := Result{Workload: opts.Workload, Jobs: opts.Jobs, Workers: opts.Workers, Processes: opts.Processes, Backlog: opts.Backlog}
	if opts.Backlog > 0 {
		began := time.Now()
		if err := st.BulkSend(ctx, queue, opts.Backlog); err != nil {
			return res, fmt.Errorf("bench: queue the backlog of %s: %w", plural.Count(opts.Backlog, "job", "jobs"), err)
		}
		res.FillSeconds = time.Since(began).Seconds()
	} else if err := sendJobs(ctx, st, queue, opts.Jobs); err != nil {
		return res, err
	}
	if opts.Workload == Ceiling {
		return runCeiling(ctx, st, queue, opts, res)
	}
	var w workerSet
	var err error
	if opts.Processes == 1 {
		w, err = startInProcess(st, queue, opts)
	} else {
		w, err = startProcesses(ctx, queue, opts)
	}
	if err != nil {
		return res, err
	}
	defer w.stop() //nolint:errcheck // stopped below; this covers the early returns
	began := time.Now()
	w.begin()
	end, tail, err := watch(ctx, st, queue, opts.Jobs, w, began)
	if err != nil {
		return res, err
	}
	if opts.Jobs/opts.Processes >= engine.DefaultVacuumAfter { // each process counts its own
		if res.ShrunkSeconds, err = waitShrunk(ctx, st, queue, end); err != nil {
			return res, err
		}
	}
	if err := w.stop(); err != nil {
		return res, err
	}
	if err := checkDone(ctx, st, queue, opts); err != nil {
		return res, err
	}
	elapsed := end.Sub(began)
	res.Seconds, res.JobsPerSecond = elapsed.Seconds(), float64(opts.Jobs)/elapsed.Seconds()
	res.EndJobs, res.EndSeconds = opts.Jobs-int(tail.done), end.Sub(tail.at).Seconds()
	res.EndJobsPerSecond = float64(res.EndJobs) / res.EndSeconds
	return res, nil
}

// progress is how many jobs were done at a moment.
type progress struct {
	at   time.Time
	done int64
}

// watch samples the workers' count of jobs done every few milliseconds
// until it reaches jobs and the queue is empty, and returns when that was
// seen and the last sample taken before the count reached the drain's last
// tenth: the rate from there to the end is the rate at the end. The
// database is only asked whether the queue is empty once the count says
// every job is done, so that watching costs the run nothing.
func watch(ctx context.Context, st *store.Store, queue string, jobs int, w workerSet, began time.Time) (end time.Time, tail progress, err error) {
	tailFrom := int64(jobs - max(jobs/10, 1))
	prev := progress{at: began}
	tailSeen := false
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		now := progress{at: time.Now(), done: w.finished()}
		if !tailSeen && now.done >= tailFrom {
			tail, tailSeen = prev, true
		}
		prev = now
		if now.done >= int64(jobs) {
			empty, err := st.IsEmpty(ctx, queue)
			if err != nil {
				return end, tail, fmt.Errorf("bench: see whether the queue is empty: %w", err)
			}
			if empty {
				return time.Now(), tail, nil
			}
		}
		select {
		case <-w.exited():
			return end, tail, fmt.Errorf("bench: workers stopped early: %w", w.exitErr())
		case <-ctx.Done():
			return end, tail, ctx.Err()
		case <-tick.C:
		}
	}
}

// checkDone makes sure every job was done exactly once before a figure is
// reported: each in the archive, or for dead each in the DLQ, once. An
// empty queue alone does not tell a job done from a job lost.
func checkDone(ctx context.Context, st *store.Store, queue string, opts Options) error {
	d, err := st.CountDone(ctx, queue)
	if err != nil {
		return fmt.Errorf("bench: count the jobs done: %w", err)
	}
	n := int64(opts.Jobs)
	want := store.DoneCounts{Archived: n, Distinct: n}
	if opts.Workload == Dead {
		want = store.DoneCounts{DeadLettered: n, Distinct: n}
	}
	if d != want {
		return fmt.Errorf("bench: of %d jobs, %d were archived and %d dead-lettered, %d distinct; want %d archived, %d dead-lettered, each once: the run is void: report it as a bug with the workload and options",
			n, d.Archived, d.DeadLettered, d.Distinct, want.Archived, want.DeadLettered)
	}
	return nil
}

func newClient(st *store.Store, queue string, workers int, logger *slog.Logger) (*engine.Client, error) {
	return engine.NewClient(st, engine.Config{
		Queues:            []engine.QueueConfig{{Name: queue, Concurrency: workers}},
		Logger:            logger,
		PollInterval:      50 * time.Millisecond,
		RetentionInterval: -1,
	})
}

var errBench = errors.New("bench: planned failure")

func handlerFor(workload string) engine.HandlerFunc {
	switch workload {
	case Retry:
		return func(_ context.Context, job *engine.Job) error {
			if job.Attempt == 1 {
				return errBench
			}
			return nil
		}
	case Dead:
		return func(context.Context, *engine.Job) error { return errBench }
	}
	return func(context.Context, *engine.Job) error { return nil }
}

// countingHandler is the workload's handler, counting in done the jobs
// whose attempt ends them: a success, or the failure of the last attempt.
func countingHandler(workload string, done *atomic.Int64) engine.HandlerFunc {
	h := handlerFor(workload)
	return func(ctx context.Context, job *engine.Job) error {
		err := h(ctx, job)
		if err == nil || job.Attempt >= job.MaxRetries {
			done.Add(1)
		}
		return err
	}
}

func sendJobs(ctx context.Context, st *store.Store, queue string, n int) error {
	batch := make([]store.NewMessage, 0, 1000)
	for i := range n {
		batch = append(batch, store.NewMessage{Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := st.SendBatch(ctx, queue, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// waitEmpty polls until the queue holds no message, or the client stops.
func waitEmpty(ctx context.Context, st *store.Store, queue string, runDone <-chan error) error {
	for {
		empty, err := st.IsEmpty(ctx, queue)
		if err != nil {
			return err
		}
		if empty {
			return nil
		}
		select {
		case err := <-runDone:
			return fmt.Errorf("bench: workers stopped early: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// runSteady sends at a fixed rate for the duration while the workers drain,
// recording each job's enqueue-to-start latency and the backlog.
func runSteady(ctx context.Context, st *store.Store, queue string, opts Options) (Result, error) {
	c, err := newClient(st, queue, opts.Workers, opts.Logger)
	if err != nil {
		return Result{}, err
	}
	var mu sync.Mutex
	latencies := make([]float64, 0, opts.Rate*int(opts.Duration.Seconds()+1))
	c.HandleQueue(queue, func(_ context.Context, job *engine.Job) error {
		ms := float64(time.Since(job.EnqueuedAt)) / float64(time.Millisecond)
		mu.Lock()
		latencies = append(latencies, ms)
		mu.Unlock()
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	// The workers have stopped, their row written, by the time the run
	// returns, early or not: the queue's drop forgets the row.
	finish := sync.OnceValue(func() error { stop(); return <-done })
	defer finish() //nolint:errcheck // the run's error is the one returned
	began := time.Now()
	sent, backlog, err := produce(ctx, st, queue, opts)
	if err != nil {
		return Result{}, err
	}
	if err := waitEmpty(ctx, st, queue, done); err != nil {
		return Result{}, err
	}
	elapsed := time.Since(began)
	_ = finish()
	mu.Lock()
	defer mu.Unlock()
	if len(latencies) != sent {
		return Result{}, fmt.Errorf("bench: %s sent but %d handled; the run is void: report it as a bug with the rate and duration", plural.Count(sent, "job", "jobs"), len(latencies))
	}
	slices.Sort(latencies)
	res := Result{Workload: Steady, Jobs: sent, Workers: opts.Workers, Processes: 1, Rate: opts.Rate,
		Seconds: elapsed.Seconds(), JobsPerSecond: float64(sent) / elapsed.Seconds()}
	res.LatencyP50MS, res.LatencyP95MS, res.LatencyP99MS = pct(latencies, 0.50), pct(latencies, 0.95), pct(latencies, 0.99)
	maxB, bounded := backlogShape(backlog, opts.Rate)
	res.MaxBacklog, res.BacklogBounded = &maxB, &bounded
	return res, nil
}

// produce sends Rate jobs a second for the duration, every 10ms sending
// what is due by then, so that a slow send (a loaded machine) is caught up
// on the next tick instead of lowering the rate; it samples the backlog
// every 100ms.
func produce(ctx context.Context, st *store.Store, queue string, opts Options) (int, []int64, error) {
	const tick, sampleEvery = 10 * time.Millisecond, 100 * time.Millisecond
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	began := time.Now()
	nextSample := began.Add(sampleEvery)
	sent := 0
	var backlog []int64
	for {
		elapsed := min(time.Since(began), opts.Duration)
		due := int(float64(opts.Rate) * elapsed.Seconds())
		if elapsed == opts.Duration {
			due = int(float64(opts.Rate) * opts.Duration.Seconds())
		}
		for due > sent {
			batch := make([]store.NewMessage, min(due-sent, store.MaxBatch))
			for j := range batch {
				batch[j] = store.NewMessage{Payload: json.RawMessage(`{}`)}
			}
			if _, err := st.SendBatch(ctx, queue, batch); err != nil {
				return sent, backlog, err
			}
			sent += len(batch)
		}
		if now := time.Now(); !now.Before(nextSample) {
			nextSample = now.Add(sampleEvery)
			m, err := st.Metrics(ctx, queue)
			if err != nil {
				return sent, backlog, err
			}
			backlog = append(backlog, m.Depth)
		}
		if elapsed == opts.Duration {
			return sent, backlog, nil
		}
		select {
		case <-ticker.C:
		case <-ctx.Done():
			return sent, backlog, ctx.Err()
		}
	}
}

// backlogShape returns the largest backlog seen and whether it stayed
// bounded: the second half of the run never held more than the first half's
// peak plus half a second of sending.
func backlogShape(samples []int64, rate int) (int64, bool) {
	if len(samples) == 0 {
		return 0, true
	}
	half := len(samples) / 2
	var first, second int64
	for i, s := range samples {
		if i < half {
			first = max(first, s)
		} else {
			second = max(second, s)
		}
	}
	return max(first, second), second <= first+int64(rate/2)
}

func pct(sorted []float64, p float64) *float64 {
	if len(sorted) == 0 {
		return nil
	}
	v := sorted[min(int(p*float64(len(sorted))), len(sorted)-1)]
	return &v
}

// runCeiling drains the queued jobs as the ceiling workload does, timing
// from the first claim until the queue is empty, and over its last tenth
// as runBatch does.
func runCeiling(ctx context.Context, st *store.Store, queue string, opts Options, res Result) (Result, error) {
	var done atomic.Int64
	tailFrom := int64(opts.Jobs - max(opts.Jobs/10, 1))
	var tailAt atomic.Int64 // unix nanoseconds when done passed tailFrom
	began := time.Now()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, CeilingConnections)
	for range CeilingConnections {
		wg.Go(func() {
			for {
				n, err := st.ClaimArchive(cctx, queue, CeilingBatch)
				if err != nil {
					errs <- fmt.Errorf("bench: ceiling: %w", err)
					cancel()
					return
				}
				if n == 0 {
					return
				}
				if d := done.Add(int64(n)); d >= tailFrom && d-int64(n) < tailFrom {
					tailAt.Store(time.Now().UnixNano())
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	end := time.Now()
	if err := checkDone(ctx, st, queue, opts); err != nil {
		return res, err
	}
	elapsed := end.Sub(began)
	res.Processes = 1
	res.Workers = CeilingConnections
	res.Seconds, res.JobsPerSecond = elapsed.Seconds(), float64(opts.Jobs)/elapsed.Seconds()
	tail := time.Unix(0, tailAt.Load())
	res.EndJobs, res.EndSeconds = opts.Jobs-int(tailFrom), end.Sub(tail).Seconds()
	if res.EndSeconds > 0 {
		res.EndJobsPerSecond = float64(res.EndJobs) / res.EndSeconds
	}
	return res, nil
}
