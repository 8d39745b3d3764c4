package runner_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// setUp returns the operations layer over the shared test store and a
// declared queue of the demo handler with two retries, which Prepare
// created.
func setUp(t *testing.T) (*store.Store, *ops.Service, config.WorkQueue) {
	t.Helper()
	return setUpOn(t, pgtest.Store(t))
}

// setUpOn is setUp on the database of st.
func setUpOn(t *testing.T, st *store.Store) (*store.Store, *ops.Service, config.WorkQueue) {
	t.Helper()
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	retries := 2
	q := config.WorkQueue{Name: pgtest.Name("run"), Concurrency: 4, Declared: true,
		Handler: handlers.Spec{Type: handlers.TypeDemo}, Settings: config.Settings{MaxRetries: &retries}}
	if err := runner.Prepare(pgtest.Context(t), svc, []config.WorkQueue{q}, nil); err != nil {
		t.Fatal(err)
	}
	return st, svc, q
}

func send(t *testing.T, svc *ops.Service, queue string, n int) {
	t.Helper()
	for range n {
		if _, err := svc.Send(pgtest.Context(t), ops.SendRequest{Queue: queue, Payload: []byte(`{"order_id": 1}`)}); err != nil {
			t.Fatal(err)
		}
	}
}

// Prepare created the declared queue with the file's settings; Work with
// UntilIdle then runs every job and stops by itself, without an error, and
// NewClient's job log says how each ended.
func TestWorkUntilIdle(t *testing.T) {
	ctx := pgtest.Context(t)
	st, svc, q := setUp(t)
	queues := []config.WorkQueue{q}
	stats, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name})
	if err != nil || stats.Queues[0].Settings.MaxRetries != 2 {
		t.Fatalf("prepared queue: %v, %+v", err, stats)
	}
	send(t, svc, q.Name, 5)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	client, err := runner.NewClient(st, queues, engine.Config{PollInterval: 50 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Work(ctx, client, svc, queues, runner.WorkOptions{UntilIdle: true, Where: "here", Logger: log}); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if n := pgtest.Archived(t, st, q.Name); n != 5 {
		t.Fatalf("%d of 5 jobs archived", n)
	}
	for _, want := range []string{"pgbus work: starting", q.Name + " (demo, concurrency 4)", "where=here", "version=\"" + buildinfo.Describe(), "pgbus: job done", "no work left, every queue empty or paused", "pgbus work: stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// The log names every queue worked with its handler and concurrency,
// through the redaction of the command line's logger, whatever the
// queue's name: one ending in a word that names secrets elsewhere is no
// secret key.
func TestWorkLogNamesQueuesNamedLikeSecrets(t *testing.T) {
	ctx := pgtest.Context(t)
	st, svc, _ := setUp(t)
	q := config.WorkQueue{Name: pgtest.Name("run") + "_token", Concurrency: 3, Declared: true, Handler: handlers.Spec{Type: handlers.TypeDemo}}
	queues := []config.WorkQueue{q}
	if err := runner.Prepare(ctx, svc, queues, nil); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(ops.RedactingHandler(slog.NewTextHandler(&logs, nil)))
	client, err := runner.NewClient(st, queues, engine.Config{PollInterval: 50 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Work(ctx, client, svc, queues, runner.WorkOptions{UntilIdle: true, Logger: log}); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if want := q.Name + " (demo, concurrency 3)"; !strings.Contains(logs.String(), want) || strings.Contains(logs.String(), ops.Redacted) {
		t.Errorf("log lacks %q, or hides part of it:\n%s", want, logs.String())
	}
}

// Work stops when For has passed, with jobs still waiting in a paused
// queue, and says so as no error.
func TestWorkFor(t *testing.T) {
	ctx := pgtest.Context(t)
	st, svc, q := setUp(t)
	queues := []config.WorkQueue{q}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q.Name}); err != nil {
		t.Fatal(err)
	}
	send(t, svc, q.Name, 1)
	log := slog.New(slog.DiscardHandler)
	client, err := runner.NewClient(st, queues, engine.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Work(ctx, client, svc, queues, runner.WorkOptions{For: 200 * time.Millisecond, UntilIdle: true, Logger: log}); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if n := pgtest.Live(t, st, q.Name); n != 1 {
		t.Fatalf("the paused queue holds %d messages, want 1", n)
	}
}

// Background workers (preparing their queue again changes nothing) run
// jobs after the context they started with ends, until stopped; with no
// queues there is nothing to stop.
func TestBackground(t *testing.T) {
	st, svc, q := setUp(t)
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	stop, err := runner.Background(ctx, st, svc, []config.WorkQueue{q}, engine.Config{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	send(t, svc, q.Name, 3)
	pgtest.Eventually(t, time.Minute, "3 jobs archived", func() bool { return pgtest.Archived(t, st, q.Name) == 3 })
	stop()
	none, err := runner.Background(pgtest.Context(t), st, svc, nil, engine.Config{}, nil, nil)
	if err != nil || none == nil {
		t.Fatalf("Background with no queues: %v", err)
	}
	none()
}

// WaitIdle reports the stats it saw and returns once the queue is empty,
// or the context's error while it is not.
func TestWaitIdle(t *testing.T) {
	ctx := pgtest.Context(t)
	_, svc, q := setUp(t)
	queues := []config.WorkQueue{q}
	var seen int
	if err := runner.WaitIdle(ctx, svc, queues, nil, "", func(s []ops.QueueStats) { seen = len(s) }); err != nil || seen != 1 {
		t.Fatalf("WaitIdle on an empty queue: %v, saw %d", err, seen)
	}
	send(t, svc, q.Name, 1)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := runner.WaitIdle(short, svc, queues, nil, "", nil); err != context.DeadlineExceeded {
		t.Fatalf("WaitIdle on a busy queue: %v, want the context's deadline", err)
	}
}

// A queue dropped while WaitIdle waits for it has nothing left to wait
// for: WaitIdle returns, saying so once, rather than reading it every
// 100ms, and logging each failure, until the command's time runs out.
func TestWaitIdleOnADroppedQueue(t *testing.T) {
	ctx := pgtest.Context(t)
	st, svc, q := setUp(t)
	send(t, svc, q.Name, 1)
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done := make(chan error, 1)
	looked := make(chan struct{})
	var once sync.Once
	go func() {
		done <- runner.WaitIdle(bounded, svc, []config.WorkQueue{q}, log, "", func([]ops.QueueStats) { once.Do(func() { close(looked) }) })
	}()
	// Dropped once WaitIdle has seen the queue busy, so that it is
	// waiting for it, not finding it gone at its first look.
	<-looked
	if err := st.DropQueue(ctx, q.Name); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitIdle on a queue dropped while it waited: %v; want it to return", err)
	}
	if n := strings.Count(logs.String(), "queue was dropped"); n != 1 || strings.Contains(logs.String(), "could not read queue stats") {
		t.Fatalf("the log says the queue was dropped %d times; want once, and no failed read:\n%s", n, logs.String())
	}
}

// The MCP configuration is checked before anything starts.
func TestMCPConfigCheck(t *testing.T) {
	for _, c := range []struct {
		cfg  runner.MCPConfig
		want string
	}{
		{runner.MCPConfig{Transport: mcpserver.TransportStdio}, ""},
		{runner.MCPConfig{Transport: mcpserver.TransportHTTP, HTTP: mcpserver.HTTPConfig{Addr: "127.0.0.1:0"}}, ""},
		{runner.MCPConfig{Transport: "grpc"}, `--transport "grpc": use stdio, http or sse`},
		{runner.MCPConfig{Transport: mcpserver.TransportSSE, HTTP: mcpserver.HTTPConfig{Addr: "0.0.0.0:8080"}}, "token"},
	} {
		err := c.cfg.Check()
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %q: %v, want %q", c.cfg.Transport, c.cfg.HTTP.Addr, err, c.want)
		}
	}
}

// Work to stop once the queues are idle, and within a time, fails when the
// time runs out first, saying work is left: a script's "work --until-idle
// --for 10m && next" took it for the queues drained. Idle in time, it
// returns nil.
func TestWorkUntilIdleWithinATime(t *testing.T) {
	ctx := pgtest.Context(t)
	st, svc, q := setUp(t)
	queues := []config.WorkQueue{q}
	client := func() *engine.Client {
		c, err := runner.NewClient(st, queues, engine.Config{PollInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	send(t, svc, q.Name, 2)
	if err := runner.Work(ctx, client(), svc, queues, runner.WorkOptions{UntilIdle: true, For: time.Minute}); err != nil {
		t.Fatalf("Work idle within its time: %v", err)
	}
	// Not due for an hour: never idle within the time.
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q.Name, Payload: []byte(`{"order_id": 2}`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	err := runner.Work(ctx, client(), svc, queues, runner.WorkOptions{UntilIdle: true, For: 300 * time.Millisecond})
	if !errors.Is(err, runner.ErrNotIdle) || !strings.Contains(err.Error(), "ran out with work left") {
		t.Fatalf("Work whose time ran out with a message waiting: %v; want ErrNotIdle", err)
	}
	// --for alone is no promise of idle: its end is no error.
	if err := runner.Work(ctx, client(), svc, queues, runner.WorkOptions{For: 300 * time.Millisecond}); err != nil {
		t.Fatalf("Work for a time: %v", err)
	}
}

// Prepare says when a declared queue's stored settings change to the
// file's: every process working the queue takes them, so two files that
// declare it differently took turns at them in silence. Declared the same
// again, it says nothing.
func TestPrepareSaysSettingsChanged(t *testing.T) {
	ctx := pgtest.Context(t)
	_, svc, q := setUp(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := runner.Prepare(ctx, svc, []config.WorkQueue{q}, log); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "queue settings changed") {
		t.Fatalf("the same settings again were said to change:\n%s", logs.String())
	}
	twelve := 12
	q.Settings.MaxRetries = &twelve
	if err := runner.Prepare(ctx, svc, []config.WorkQueue{q}, log); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "queue settings changed") || !strings.Contains(out, "max_retries=12") {
		t.Fatalf("settings changed by the file were not said:\n%s", out)
	}
}

// WaitIdle over several queues reads them in one call of every queue's
// stats: it waits while one of them holds a message, says once that a
// dropped one has nothing left to wait for, and returns when the rest are
// empty.
func TestWaitIdleOnSeveralQueues(t *testing.T) {
	ctx := pgtest.Context(t)
	// A database of its own: WaitIdle reads the stats of several queues in
	// one read of every queue's, which the queues of other tests would
	// slow down.
	st, svc, busy := setUpOn(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
	_, _, empty := setUpOn(t, st)
	_, _, dropped := setUpOn(t, st)
	send(t, svc, busy.Name, 1)
	if err := st.DropQueue(ctx, dropped.Name); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done := make(chan error, 1)
	var looks atomic.Int32
	go func() {
		done <- runner.WaitIdle(bounded, svc, []config.WorkQueue{busy, empty, dropped}, log, "", func(all []ops.QueueStats) {
			if looks.Add(1) == 1 && len(all) != 2 {
				t.Errorf("first look saw %d queues' stats, want the 2 that exist", len(all))
			}
		})
	}()
	pgtest.Eventually(t, 30*time.Second, "a few looks while a queue is busy", func() bool { return looks.Load() >= 3 })
	select {
	case err := <-done:
		t.Fatalf("WaitIdle returned (%v) while %s held a message", err, busy.Name)
	default:
	}
	if _, err := svc.QueuePurge(ctx, ops.QueuePurgeRequest{Queue: busy.Name, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitIdle once every queue is empty or dropped: %v; want it to return", err)
	}
	if n := strings.Count(logs.String(), "queue was dropped"); n != 1 || strings.Contains(logs.String(), "could not read queue stats") {
		t.Fatalf("the log says a queue was dropped %d times; want once, and no failed read:\n%s", n, logs.String())
	}
}
