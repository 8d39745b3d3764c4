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
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// Workloads of Run.
const (
	Drain  = "drain"
	Retry  = "retry"
	Dead   = "dead"
	Steady = "steady"
)

// Workloads lists the workload names.
var Workloads = []string{Drain, Retry, Dead, Steady}

// Options configure one run.
type Options struct {
	Workload string
	// Jobs is how many jobs drain, retry and dead work. Default 20,000.
	Jobs int
	// Workers is the queue's concurrency. Default 100.
	Workers int
	// Rate (jobs/s) and Duration shape the steady workload. Defaults
	// 2,000/s for 10s.
	Rate     int
	Duration time.Duration
	Logger   *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Jobs == 0 {
		o.Jobs = 20_000
	}
	if o.Workers == 0 {
		o.Workers = 100
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

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case !slices.Contains(Workloads, o.Workload):
		return fmt.Errorf("%w: workload %q: use one of %v", store.ErrInvalid, o.Workload, Workloads)
	case o.Jobs < 1 || o.Jobs > 10_000_000:
		return fmt.Errorf("%w: jobs %d is out of range 1..10,000,000", store.ErrInvalid, o.Jobs)
	case o.Workers < 1 || o.Workers > engine.MaxConcurrency:
		return fmt.Errorf("%w: workers %d is out of range 1..%d", store.ErrInvalid, o.Workers, engine.MaxConcurrency)
	case o.Rate < 1 || o.Rate > 1_000_000:
		return fmt.Errorf("%w: rate %d is out of range 1..1,000,000 jobs/s", store.ErrInvalid, o.Rate)
	case o.Duration < time.Second || o.Duration > time.Hour:
		return fmt.Errorf("%w: duration %s is out of range 1s..1h", store.ErrInvalid, o.Duration)
	}
	return nil
}

// Result is one run, printed as one JSON line.
type Result struct {
	Workload      string  `json:"workload"`
	Jobs          int     `json:"jobs"`
	Workers       int     `json:"workers"`
	Seconds       float64 `json:"seconds"`
	JobsPerSecond float64 `json:"jobs_per_second"`
	// Steady only.
	Rate           int      `json:"rate,omitempty"`
	LatencyP50MS   *float64 `json:"latency_p50_ms,omitempty"`
	LatencyP95MS   *float64 `json:"latency_p95_ms,omitempty"`
	LatencyP99MS   *float64 `json:"latency_p99_ms,omitempty"`
	MaxBacklog     *int64   `json:"max_backlog,omitempty"`
	BacklogBounded *bool    `json:"backlog_bounded,omitempty"`
}

// Run runs one workload on a fresh queue.
func Run(ctx context.Context, st *store.Store, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	queue, err := freshQueue(ctx, st, opts.Workload)
	if err != nil {
		return Result{}, err
	}
	defer st.DropQueue(context.WithoutCancel(ctx), queue) //nolint:errcheck
	if opts.Workload == Steady {
		return runSteady(ctx, st, queue, opts)
	}
	return runBatch(ctx, st, queue, opts)
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

// runBatch sends every job up front, then times the workers from their start
// until the queue is empty: all archived, or for dead all dead-lettered.
func runBatch(ctx context.Context, st *store.Store, queue string, opts Options) (Result, error) {
	if err := sendJobs(ctx, st, queue, opts.Jobs); err != nil {
		return Result{}, err
	}
	c, err := newClient(st, queue, opts)
	if err != nil {
		return Result{}, err
	}
	c.HandleQueue(queue, handlerFor(opts.Workload))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	if err := waitEmpty(ctx, st, queue, done); err != nil {
		return Result{}, err
	}
	elapsed := time.Since(began)
	stop()
	<-done
	if err := checkSettled(ctx, st, queue, opts); err != nil {
		return Result{}, err
	}
	return Result{Workload: opts.Workload, Jobs: opts.Jobs, Workers: opts.Workers,
		Seconds: elapsed.Seconds(), JobsPerSecond: float64(opts.Jobs) / elapsed.Seconds()}, nil
}

// checkSettled makes sure every job was done before a figure is reported:
// all archived, or for dead all in the DLQ. An empty queue alone does not
// tell a job done from a job lost.
func checkSettled(ctx context.Context, st *store.Store, queue string, opts Options) error {
	where, what := queue, "archived"
	if opts.Workload == Dead {
		where, what = store.DLQName(queue), "dead-lettered"
	}
	m, err := st.Metrics(ctx, where)
	if err != nil {
		return fmt.Errorf("bench: count the jobs done in %s: %w", where, err)
	}
	got := m.Archived
	if opts.Workload == Dead {
		got = m.Depth
	}
	if got != int64(opts.Jobs) {
		return fmt.Errorf("bench: %d of %d jobs were %s in %s; the run is void: report it as a bug with the workload and options", got, opts.Jobs, what, where)
	}
	return nil
}

func newClient(st *store.Store, queue string, opts Options) (*engine.Client, error) {
	return engine.NewClient(st, engine.Config{
		Queues:            []engine.QueueConfig{{Name: queue, Concurrency: opts.Workers}},
		Logger:            opts.Logger,
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
	c, err := newClient(st, queue, opts)
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
	began := time.Now()
	sent, backlog, err := produce(ctx, st, queue, opts)
	if err != nil {
		return Result{}, err
	}
	if err := waitEmpty(ctx, st, queue, done); err != nil {
		return Result{}, err
	}
	elapsed := time.Since(began)
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(latencies) != sent {
		return Result{}, fmt.Errorf("bench: %d jobs sent but %d handled; the run is void: report it as a bug with the rate and duration", sent, len(latencies))
	}
	slices.Sort(latencies)
	res := Result{Workload: Steady, Jobs: sent, Workers: opts.Workers, Rate: opts.Rate,
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
