package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// workerSet is the workers of one run, in this process or in others.
type workerSet interface {
	// begin sets the workers working.
	begin()
	// finished counts the jobs done so far (see countingHandler).
	finished() int64
	// exited is closed when a worker stops, which before stop is a
	// failure; exitErr then says why.
	exited() <-chan struct{}
	exitErr() error
	// stop stops the workers, waiting for them to finish their jobs, and
	// reports a worker that failed. It may be called more than once.
	stop() error
}

// inProcess is the workers of one engine client in this process.
type inProcess struct {
	client   *engine.Client
	done     atomic.Int64
	cancel   context.CancelFunc
	ctx      context.Context
	begun    atomic.Bool
	gone     chan struct{}
	err      error // once gone is closed
	stopOnce sync.Once
}

func startInProcess(st *store.Store, queue string, opts Options) (*inProcess, error) {
	w := &inProcess{gone: make(chan struct{})}
	c, err := newClient(st, queue, opts.Workers, opts.Logger)
	if err != nil {
		return nil, err
	}
	c.HandleQueue(queue, countingHandler(opts.Workload, &w.done))
	w.client = c
	// The client's context is not the caller's: stop ends it, after the
	// run is measured, whatever the caller's does.
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w, nil
}

func (w *inProcess) begin() {
	w.begun.Store(true)
	go func() {
		w.err = w.client.Run(w.ctx)
		close(w.gone)
	}()
}

func (w *inProcess) finished() int64         { return w.done.Load() }
func (w *inProcess) exited() <-chan struct{} { return w.gone }

func (w *inProcess) exitErr() error {
	if w.err == nil {
		return errors.New("the engine stopped without an error")
	}
	return w.err
}

func (w *inProcess) stop() error {
	w.stopOnce.Do(func() {
		w.cancel()
		if w.begun.Load() {
			<-w.gone // Run writes the outcomes it holds before it returns
		}
	})
	if w.begun.Load() && w.err != nil && !errors.Is(w.err, context.Canceled) {
		return fmt.Errorf("bench: workers: %w", w.err)
	}
	return nil
}

// WorkerSpec is one worker process's share of a run: Work's arguments.
type WorkerSpec struct {
	Queue    string
	Workload string
	Workers  int
}

// Validate checks the spec.
func (s WorkerSpec) Validate() error {
	switch {
	case s.Workload == Steady || !slices.Contains(Workloads, s.Workload):
		return fmt.Errorf("%w: bench worker: workload %q: use drain, retry or dead", store.ErrInvalid, s.Workload)
	case s.Workers < 1 || s.Workers > engine.MaxConcurrency:
		return fmt.Errorf("%w: bench worker: workers %d is out of range 1..%d", store.ErrInvalid, s.Workers, engine.MaxConcurrency)
	}
	return store.ValidateQueueName(s.Queue)
}

// The lines a worker process and Run exchange. The worker writes
// lineReady once it is set up, then waits for lineGo on its standard
// input, so that the clock starts when every process is ready to work;
// while it works it writes lineDone and its count of jobs done whenever
// that changed, at most every 10ms. The end of its standard input stops
// it: Run closing it, or Run's process dying.
const (
	lineReady = "ready"
	lineGo    = "go"
	lineDone  = "done "
)

// Work is the body of one worker process of a run with more than one
// process: it works spec.Queue with spec.Workers workers and the
// workload's handler, talking with the Run that started it over in (its
// standard input) and out (its standard output), and returns once in ends
// and its jobs in hand are finished.
func Work(ctx context.Context, st *store.Store, spec WorkerSpec, in io.Reader, out io.Writer, logger *slog.Logger) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var done atomic.Int64
	c, err := newClient(st, spec.Queue, spec.Workers, logger)
	if err != nil {
		return fmt.Errorf("bench worker: %w", err)
	}
	c.HandleQueue(spec.Queue, countingHandler(spec.Workload, &done))
	if _, err := fmt.Fprintln(out, lineReady); err != nil {
		return fmt.Errorf("bench worker: tell the benchmark it is ready: %w", err)
	}
	lines := bufio.NewScanner(in)
	if !lines.Scan() {
		return nil // the benchmark ended before it began
	}
	if got := lines.Text(); got != lineGo {
		return fmt.Errorf("bench worker: read %q where %q was expected on standard input; run it only from pgbus bench --processes", got, lineGo)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for lines.Scan() {
		}
		stop()
	}()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	reported := int64(-1)
	report := func() error {
		n := done.Load()
		if n == reported {
			return nil
		}
		reported = n
		_, err := fmt.Fprintf(out, "%s%d\n", lineDone, n)
		return err
	}
	for {
		select {
		case err := <-ran:
			if rerr := report(); rerr != nil && err == nil {
				err = rerr
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("bench worker: %w", err)
			}
			return nil
		case <-tick.C:
			if err := report(); err != nil {
				stop()
				<-ran
				return fmt.Errorf("bench worker: report progress: %w", err)
			}
		}
	}
}

// child is one worker process as Run sees it.
type child struct {
	n     int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  atomic.Int64
	ready chan struct{}
	gone  chan struct{}
	err   error // once gone is closed
	tail  *tailBuffer
}

// processes is the worker processes of one run.
type processes struct {
	children []*child
	anyGone  chan struct{}
	goneOnce sync.Once
	stopOnce sync.Once
	stopErr  error
}

// readyTimeout bounds how long a worker process may take to connect and
// set up: long, because a loaded machine starts processes slowly.
const readyTimeout = 2 * time.Minute

// startProcesses starts opts.Processes worker processes with opts.Spawn,
// opts.Workers spread evenly over them, and waits until each is ready.
func startProcesses(ctx context.Context, queue string, opts Options) (*processes, error) {
	p := &processes{anyGone: make(chan struct{})}
	for i := range opts.Processes {
		spec := WorkerSpec{Queue: queue, Workload: opts.Workload, Workers: opts.Workers / opts.Processes}
		if i < opts.Workers%opts.Processes {
			spec.Workers++
		}
		c, err := p.spawn(ctx, i+1, spec, opts)
		if err != nil {
			_ = p.stop()
			return nil, err
		}
		p.children = append(p.children, c)
	}
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	for _, c := range p.children {
		select {
		case <-c.ready:
		case <-c.gone:
			_ = p.stop()
			return nil, fmt.Errorf("bench: worker process %d of %d ended before it was ready: %w", c.n, len(p.children), c.failure())
		case <-timeout.C:
			_ = p.stop()
			return nil, fmt.Errorf("bench: worker process %d of %d was not ready after %s; its log ends: %s", c.n, len(p.children), readyTimeout, c.tail)
		case <-ctx.Done():
			_ = p.stop()
			return nil, ctx.Err()
		}
	}
	return p, nil
}

func (p *processes) spawn(ctx context.Context, n int, spec WorkerSpec, opts Options) (*child, error) {
	c := &child{n: n, cmd: opts.Spawn(ctx, spec), ready: make(chan struct{}), gone: make(chan struct{}), tail: &tailBuffer{}}
	c.cmd.Stderr = c.tail
	if opts.ChildStderr != nil {
		c.cmd.Stderr = io.MultiWriter(c.tail, opts.ChildStderr)
	}
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("bench: start worker process %d: %w", n, err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: start worker process %d: %w", n, err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start worker process %d (%s): %w", n, c.cmd.Path, err)
	}
	go func() {
		c.err = c.read(stdout)
		// Wait only once the output is read: it closes the pipe.
		if werr := c.cmd.Wait(); werr != nil {
			c.err = werr
		}
		close(c.gone)
		p.goneOnce.Do(func() { close(p.anyGone) })
	}()
	return c, nil
}

// read takes the child's lines until its output ends.
func (c *child) read(stdout io.Reader) error {
	lines := bufio.NewScanner(stdout)
	isReady := false
	for lines.Scan() {
		line := lines.Text()
		switch {
		case line == lineReady && !isReady:
			isReady = true
			close(c.ready)
		case strings.HasPrefix(line, lineDone):
			n, err := strconv.ParseInt(strings.TrimPrefix(line, lineDone), 10, 64)
			if err != nil {
				return fmt.Errorf("worker process %d wrote %q, not a count of jobs done", c.n, line)
			}
			c.done.Store(n)
		default:
			return fmt.Errorf("worker process %d wrote %q on its standard output, which is for the benchmark's lines", c.n, line)
		}
	}
	return lines.Err()
}

// failure is why a child ended, its log's end included.
func (c *child) failure() error {
	if c.err == nil {
		return fmt.Errorf("it exited; its log ends: %s", c.tail)
	}
	return fmt.Errorf("%w; its log ends: %s", c.err, c.tail)
}

func (p *processes) begin() {
	for _, c := range p.children {
		// A child that is gone shows in exited; the write's error adds
		// nothing.
		_, _ = io.WriteString(c.stdin, lineGo+"\n")
	}
}

func (p *processes) finished() int64 {
	var n int64
	for _, c := range p.children {
		n += c.done.Load()
	}
	return n
}

func (p *processes) exited() <-chan struct{} { return p.anyGone }

func (p *processes) exitErr() error {
	for _, c := range p.children {
		select {
		case <-c.gone:
			return fmt.Errorf("worker process %d of %d: %w", c.n, len(p.children), c.failure())
		default:
		}
	}
	return errors.New("no worker process ended")
}

// stopTimeout is how long a worker process gets to finish its jobs in hand
// and exit once its input is closed, before it is killed.
const stopTimeout = time.Minute

// stop closes every child's input, which stops it, and waits for each to
// exit; one that does not exit in time is killed.
func (p *processes) stop() error {
	p.stopOnce.Do(func() {
		for _, c := range p.children {
			_ = c.stdin.Close()
		}
		deadline := time.NewTimer(stopTimeout)
		defer deadline.Stop()
		var errs []error
		for _, c := range p.children {
			select {
			case <-c.gone:
			case <-deadline.C:
				_ = c.cmd.Process.Kill()
				<-c.gone
				errs = append(errs, fmt.Errorf("bench: worker process %d of %d did not exit within %s of being stopped and was killed; its log ends: %s",
					c.n, len(p.children), stopTimeout, c.tail))
				continue
			}
			if c.err != nil {
				errs = append(errs, fmt.Errorf("bench: worker process %d of %d: %w", c.n, len(p.children), c.failure()))
			}
		}
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

// tailBuffer keeps the last few kilobytes written to it: the end of a
// worker process's log, for errors.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4096

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(nothing)"
	}
	return s
}
