package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/store"
)

// envChaos turns the soak on and sets how long the chaos lasts, e.g. 10m.
const envChaos = "PGBUS_CHAOS"

// The soak's shape: moderate, for a small shared machine.
const (
	workers     = 3    // pgbus work processes
	concurrency = 4    // jobs of each queue at once, per process
	sendRate    = 20.0 // messages per second
)

var queues = []string{"chaos_a", "chaos_b"}

// TestChaosSoak sends messages through pgbus work processes whose
// downstream fails at random, while workers are SIGKILLed, PostgreSQL is
// restarted (fast and immediate) and dead messages are retried and
// discarded from the CLI and over MCP, all at once. Then it stops the
// chaos, waits until the workers have settled every message, and checks
// that each message sent is exactly once in a live queue, an archive, a DLQ
// or a DLQ's archive, and that the DLQ summary, the queue stats and the
// failure history agree with the tables.
func TestChaosSoak(t *testing.T) {
	d := chaosDuration(t)
	h := newHarness(t)
	begin := time.Now()
	h.runChaos(d)
	chaosEnd := time.Now()
	h.settle()
	h.fleet.stop()
	t.Logf("chaos %s, then settled in %s", chaosEnd.Sub(begin).Round(time.Second), time.Since(chaosEnd).Round(time.Second))
	h.account(time.Since(begin))
}

// chaosDuration reads PGBUS_CHAOS, skipping the test without it.
func chaosDuration(t *testing.T) time.Duration {
	v := os.Getenv(envChaos)
	if v == "" {
		t.Skipf("the chaos soak is opt-in: run it with %s=10m go test -race -timeout 30m -run TestChaosSoak ./internal/chaos/ (1m for a quick run)", envChaos)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration such as 1m or 10m", envChaos, v)
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl) < d+8*time.Minute {
		t.Fatalf("%s=%s leaves too little of go test's -timeout for the build and the settling: pass -timeout %s", envChaos, d, (d + 20*time.Minute).Round(time.Minute))
	}
	return d
}

// harness is everything the soak runs.
type harness struct {
	t     testing.TB
	dir   string
	pg    *cluster
	st    *store.Store
	down  *downstream
	fleet *fleet
	mcp   *client.Client
	send  *sender
	fix   *repairs

	restarts    map[string]int // pg_ctl restarts by mode
	restartErrs int
}

// newHarness starts the cluster, the downstream, the workers and the MCP
// server, and creates the queues.
func newHarness(t *testing.T) *harness {
	h := &harness{t: t, dir: logDir(t), pg: startCluster(t), down: startDownstream(t), restarts: map[string]int{}}
	ctx := context.Background()
	st, err := store.Open(ctx, h.pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	h.st = st
	h.createQueues()
	cfg := h.writeConfig()
	h.fleet = newFleet(t, workers, h.dir, "work", "--config", cfg, "--database-url", h.pg.URL(), "--log-format", "json",
		"--for", workerLifetime(t).String())
	h.fleet.ensure()
	t.Cleanup(h.fleet.stop)
	h.mcp = h.startMCP()
	h.send = &sender{st: st, queues: queues, rate: sendRate}
	h.fix = &repairs{st: st, url: h.pg.URL(), queues: queues, mcp: h.mcp, calls: map[string]int{}, logf: t.Logf}
	return h
}

// workerLifetime bounds how long a worker runs: past the test's deadline,
// so that workers never outlive a test that go test ended by its timeout.
func workerLifetime(t *testing.T) time.Duration {
	if dl, ok := t.Deadline(); ok {
		return time.Until(dl).Round(time.Second) + time.Minute
	}
	return 24 * time.Hour
}

// logDir makes the directory of the processes' logs and the configuration
// file; it is kept when the test fails, for a look at the logs.
func logDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "pgbus-chaos-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the logs of the pgbus processes are in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// createQueues creates the queues from the command line: quick retries, a
// short visibility timeout so that a killed worker's jobs come back soon.
func (h *harness) createQueues() {
	ctx := context.Background()
	for _, q := range queues {
		out, err := cli(ctx, h.pg.URL(), "queue", "create", q, "--max-retries", "3",
			"--backoff", "50ms", "--backoff-max", "500ms", "--jitter", "0.2", "--visibility-timeout", "3s")
		if err != nil {
			h.t.Fatalf("%v\n%s", err, out)
		}
	}
}

// writeConfig writes the workers' configuration file: every queue worked by
// the http handler against the downstream, with a breaker that opens and
// closes quickly.
func (h *harness) writeConfig() string {
	cfg := "worker:\n  poll_interval: 200ms\n  drain_timeout: 5s\nqueues:\n"
	for _, q := range queues {
		cfg += fmt.Sprintf(`  %s:
    concurrency: %d
    max_retries: 3
    visibility_timeout: 3s
    backoff: 50ms
    backoff_max: 500ms
    jitter: 0.2
    handler:
      type: http
      url: %s/jobs
      timeout: 5s
      breaker: {failure_threshold: 8, cool_off: 200ms, max_cool_off: 2s}
`, q, concurrency, h.down.srv.URL)
	}
	path := filepath.Join(h.dir, "pgbus.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// startMCP starts pgbus serve (no workers of its own) and connects a
// client to it over stdio.
func (h *harness) startMCP() *client.Client {
	log, err := os.Create(filepath.Join(h.dir, "serve.log"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { log.Close() })
	c, err := client.NewStdioMCPClientWithOptions(binary, nil, []string{"serve", "--database-url", h.pg.URL()},
		transport.WithCommandStderrWriter(log))
	if err != nil {
		h.t.Fatalf("start pgbus serve: %v", err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "chaos", Version: "1"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, init); err != nil {
		h.t.Fatalf("initialize the MCP session: %v", err)
	}
	return c
}

// runChaos sends n messages over d while killing workers, restarting the
// server and repairing DLQs, and returns once the chaos has stopped and
// every message is stored.
func (h *harness) runChaos(d time.Duration) {
	h.send.n = int(sendRate * d.Seconds())
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { h.killWorkers(ctx) })
	wg.Go(func() { h.restartServer(ctx) })
	wg.Go(func() { h.fix.runCLI(ctx) })
	wg.Go(func() { h.fix.runMCP(ctx) })
	// The sender may fall behind during outages: it finishes after the
	// chaos, on a calm system.
	sendCtx, cancelSend := context.WithTimeout(context.Background(), d+5*time.Minute)
	defer cancelSend()
	if err := h.send.run(sendCtx); err != nil {
		h.t.Errorf("sender stopped after %d of %d messages: %v", len(h.send.sent), h.send.n, err)
	}
	wg.Wait()
}

// killWorkers SIGKILLs a random worker every few seconds and restarts it a
// moment later.
func (h *harness) killWorkers(ctx context.Context) {
	for pause(ctx, 2*time.Second, 6*time.Second) {
		i := rand.IntN(workers)
		h.fleet.kill(i)
		pause(ctx, 200*time.Millisecond, 1500*time.Millisecond)
		h.fleet.start(i)
	}
}

// restartServer restarts PostgreSQL every 15 to 30 seconds, fast and
// immediate in turn.
func (h *harness) restartServer(ctx context.Context) {
	modes := []string{"fast", "immediate"}
	for i := 0; pause(ctx, 15*time.Second, 30*time.Second); i++ {
		mode := modes[i%2]
		if err := h.pg.restart(context.Background(), mode); err != nil {
			h.restartErrs++
			h.t.Errorf("restart PostgreSQL: %v", err)
			continue
		}
		h.restarts[mode]++
	}
}

// settle brings every worker back and waits until no message is live: each
// has succeeded or died, as the downstream always answers.
func (h *harness) settle() {
	h.fleet.ensure()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		live, err := h.liveMessages(ctx)
		if err == nil && live == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the workers did not settle within 5 minutes of the chaos: %d messages still live (%v); see the logs in %s", live, err, h.dir)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (h *harness) liveMessages(ctx context.Context) (int, error) {
	total := 0
	for _, q := range queues {
		var n int
		if err := h.st.Pool().QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM pgmq."q_%s"`, q)).Scan(&n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
