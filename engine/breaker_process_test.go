package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

const (
	breakerEnvChild = "PGBUS_BREAKER_CHILD"
	breakerEnvURL   = "PGBUS_BREAKER_DB"
	breakerEnvQueue = "PGBUS_BREAKER_QUEUE"
	breakerEnvName  = "PGBUS_BREAKER_NAME"
	breakerEnvHTTP  = "PGBUS_BREAKER_DOWNSTREAM"
)

// callDownstream posts to a downstream and fails on anything but 2xx.
func callDownstream(url string) engine.HandlerFunc {
	return func(ctx context.Context, job *engine.Job) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		if err != nil {
			return engine.NonRetryable(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode >= 300 {
			return fmt.Errorf("downstream answered %d", resp.StatusCode)
		}
		return nil
	}
}

func breakerConfig(name string) *store.BreakerConfig {
	return &store.BreakerConfig{Name: name, FailureThreshold: 3, CoolOff: 700 * time.Millisecond, MaxCoolOff: 3 * time.Second}
}

// breakerWorker is the child worker of the cross-process breaker test,
// which TestMain runs instead of the tests when breakerEnvChild is set. It
// works until its stdin closes.
func breakerWorker() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }() // the parent closing stdin stops it
	st, err := store.Open(ctx, os.Getenv(breakerEnvURL))
	if err != nil {
		fmt.Fprintln(os.Stderr, "breaker child worker:", err)
		return 1
	}
	defer st.Close()
	queue := os.Getenv(breakerEnvQueue)
	c, err := engine.NewClient(st, engine.Config{
		Queues:       []engine.QueueConfig{{Name: queue, Concurrency: 4}},
		PollInterval: 50 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// Retention prunes the whole shared database, and a pass that waits
		// for a lock another test holds outlives the SIGKILL of its process
		// (pgtest.NewClient leaves it off too).
		RetentionInterval: -1,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "breaker child worker:", err)
		return 1
	}
	c.HandleQueue(queue, callDownstream(os.Getenv(breakerEnvHTTP)), engine.HandlerOptions{Breaker: breakerConfig(os.Getenv(breakerEnvName))})
	if err := c.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "breaker child worker:", err)
		return 1
	}
	return 0
}

// flakyServer is a real downstream that fails until told to recover,
// counts the requests running at once while the breaker is half-open and
// the requests that find it open.
type flakyServer struct {
	s                  *store.Store
	breaker            string
	healthy            atomic.Bool
	whileOpen          atomic.Int32
	mu                 sync.Mutex
	inHalfOpen, probes int
}

func (f *flakyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var state string
	_ = f.s.Pool().QueryRow(r.Context(), `SELECT state FROM pgbus.circuit_breakers WHERE name = $1`, f.breaker).Scan(&state)
	if state == store.BreakerOpen {
		f.whileOpen.Add(1)
	}
	if state == store.BreakerHalfOpen {
		f.mu.Lock()
		f.inHalfOpen++
		f.probes = max(f.probes, f.inHalfOpen)
		f.mu.Unlock()
		time.Sleep(100 * time.Millisecond) // a probe takes a while: others would overlap it
		defer func() { f.mu.Lock(); f.inHalfOpen--; f.mu.Unlock() }()
	}
	if !f.healthy.Load() {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// A breaker is shared by two worker processes through PostgreSQL: a child
// process opens it against a failing downstream, this process then sees it
// open and snoozes its jobs instead of calling, and while half-open only one
// probe runs across both processes.
func TestCircuitBreakerAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 50; qs.RetryBackoff = 20 * time.Millisecond })
	name := uniqueName("downstream")
	down := &flakyServer{s: s, breaker: name}
	srv := httptest.NewServer(down)
	defer srv.Close()

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), breakerEnvChild+"=1", breakerEnvURL+"="+pgtest.URL(t),
		breakerEnvQueue+"="+q, breakerEnvName+"="+name, breakerEnvHTTP+"="+srv.URL)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childOut pgtest.SyncBuffer
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- child.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("child worker: %v\n%s", err, childOut.String())
			}
		case <-time.After(time.Minute):
			_ = child.Process.Kill()
			t.Errorf("child worker did not stop\n%s", childOut.String())
		}
	})

	parent := pgtest.NewClient(t, s, q, nil)
	for i := range 3 {
		pgtest.Send(t, parent, q, i, engine.SendOptions{})
	}
	state := func() string {
		var st string
		_ = s.Pool().QueryRow(context.Background(), `SELECT state FROM pgbus.circuit_breakers WHERE name = $1`, name).Scan(&st)
		return st
	}
	pgtest.Eventually(t, 60*time.Second, "the child process to open the breaker", func() bool { return state() == store.BreakerOpen })

	// This process joins with the breaker open: its jobs are snoozed.
	parent.HandleQueue(q, callDownstream(srv.URL), engine.HandlerOptions{Breaker: breakerConfig(name)})
	pgtest.Start(t, parent)
	for i := range 10 {
		pgtest.Send(t, parent, q, 100+i, engine.SendOptions{})
	}
	pgtest.Eventually(t, time.Minute, "jobs meeting the open breaker to be snoozed", func() bool { return snoozedUnrun(t, s, q) > 0 })
	pgtest.Eventually(t, 60*time.Second, "a probe to fail and reopen the breaker", func() bool {
		var cool float64
		_ = s.Pool().QueryRow(context.Background(), `SELECT current_cool_off_ms FROM pgbus.circuit_breakers WHERE name = $1`, name).Scan(&cool)
		return cool > 700
	})
	down.healthy.Store(true)
	pgtest.Eventually(t, 90*time.Second, "all 13 messages archived", func() bool { return pgtest.Archived(t, s, q) == 13 })
	if st := state(); st != store.BreakerClosed {
		t.Fatalf("breaker %s after recovery, want closed", st)
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	if down.probes != 1 {
		t.Fatalf("%d requests ran at once while half-open across the two processes, want 1 probe", down.probes)
	}
	// Only the requests under way when it opened may find it open: at most
	// the child's first 3 messages.
	if n := down.whileOpen.Load(); n > 3 {
		t.Fatalf("%d requests found the breaker open; at most the 3 running when it opened may", n)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" a WHERE a.read_ct > 1 + (SELECT count(*) FROM pgbus.failures f WHERE f.queue_name = $1 AND f.msg_id = a.msg_id)`, q); n != 0 {
		t.Fatalf("%d messages used attempts while snoozed by the breaker", n)
	}
}
