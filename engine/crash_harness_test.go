package engine_test

// Crash tests: worker processes are killed with SIGKILL while they hold
// messages, and nothing may be lost or finished twice.
//
// A "child worker" is this test binary run again with PGBUS_CRASH_WORKER=1,
// which TestMain runs instead of the tests: it works one queue until it is
// killed or its stdin closes (so it never outlives the test). It reports
// each handler start and end on stdout, one line each:
//
//	pgbus-crash S <msg_id> <attempt> <kind>
//	pgbus-crash E <msg_id> <attempt>

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

const (
	crashEnvWorker      = "PGBUS_CRASH_WORKER"
	crashEnvURL         = "PGBUS_CRASH_DATABASE_URL"
	crashEnvQueue       = "PGBUS_CRASH_QUEUE"
	crashEnvConcurrency = "PGBUS_CRASH_CONCURRENCY"
	crashLinePrefix     = "pgbus-crash "

	crashMaxRetries = 3
	flakyError      = "flaky downstream failed"
)

// crashSettings: the shortest visibility timeout the schema allows, so that
// a crashed worker's messages reappear quickly, and quick retries.
func crashSettings(qs *store.QueueSettings) {
	qs.MaxRetries = crashMaxRetries
	qs.VisibilityTimeout = time.Second
	qs.RetryBackoff = 10 * time.Millisecond
	qs.RetryBackoffMax = 100 * time.Millisecond
}

// crashWorker is a child worker process, which TestMain runs instead of the
// tests when crashEnvWorker is set.
func crashWorker() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "child worker: "+format+"\n", args...)
		return 1
	}
	url, queue := os.Getenv(crashEnvURL), os.Getenv(crashEnvQueue)
	conc, err := strconv.Atoi(os.Getenv(crashEnvConcurrency))
	if url == "" || queue == "" || err != nil {
		return fail("bad environment: url set %v, queue %q, concurrency %q",
			url != "", queue, os.Getenv(crashEnvConcurrency))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the parent closing stdin (or dying) stops this process
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	st, err := store.Open(ctx, url)
	if err != nil {
		return fail("open store: %v", err)
	}
	defer st.Close()
	c, err := engine.NewClient(st, engine.Config{
		Queues:       []engine.QueueConfig{{Name: queue, Concurrency: conc}},
		PollInterval: 100 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// Retention prunes the whole shared database, and a pass that waits
		// for a lock another test holds outlives the SIGKILL of its process
		// (pgtest.NewClient leaves it off too).
		RetentionInterval: -1,
	})
	if err != nil {
		return fail("%v", err)
	}
	report := func(format string, args ...any) {
		// One write per line: lines from concurrent handlers stay whole.
		_, _ = os.Stdout.WriteString(crashLinePrefix + fmt.Sprintf(format, args...) + "\n")
	}
	work := func(ctx context.Context) { // a short downstream call
		sleep := time.Duration(rand.IntN(10_000)) * time.Microsecond
		select {
		case <-ctx.Done():
		case <-time.After(sleep):
		}
	}
	track := func(fn engine.HandlerFunc) engine.HandlerFunc {
		return func(ctx context.Context, job *engine.Job) error {
			report("S %d %d %s", job.ID, job.Attempt, job.Kind)
			err := fn(ctx, job)
			report("E %d %d", job.ID, job.Attempt)
			return err
		}
	}
	c.Handle("ok", track(func(ctx context.Context, job *engine.Job) error {
		work(ctx)
		return nil
	}))
	c.Handle("flaky", track(func(ctx context.Context, job *engine.Job) error {
		work(ctx)
		if rand.Float64() < 0.3 {
			return errors.New(flakyError)
		}
		return nil
	}))
	c.Handle("poison", track(func(ctx context.Context, job *engine.Job) error {
		// Crashes the whole process, every time: Process.Kill is a SIGKILL
		// on Unix (and, unlike syscall.Kill, builds everywhere).
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Kill()
		}
		time.Sleep(time.Minute)
		return errors.New("poison message survived SIGKILL")
	}))
	c.Handle("slow", track(func(ctx context.Context, job *engine.Job) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Minute):
			return nil
		}
	}), engine.HandlerOptions{Timeout: 2 * time.Minute})
	if err := c.Run(ctx); err != nil {
		return fail("Run: %v", err)
	}
	return 0
}

// crashChild is one child worker process.
type crashChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{} // closed when the process is reaped
	stderr lockedBuffer

	killedByParent atomic.Bool

	mu       sync.Mutex
	inflight int              // handlers started and not ended, as reported
	started  map[int64][]int  // msg id -> attempts started here
	kinds    map[int64]string // msg id -> kind
}

func (c *crashChild) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *crashChild) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}

// diedOfSIGKILL reports how the reaped process ended.
func (c *crashChild) diedOfSIGKILL() bool {
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// state describes how the process ended, for messages.
func (c *crashChild) state() string {
	if c.cmd.ProcessState == nil {
		return "running"
	}
	return c.cmd.ProcessState.String()
}

// ranKind reports whether the child started a message of a kind.
func (c *crashChild) ranKind(kind string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kinds {
		if k == kind {
			return true
		}
	}
	return false
}

func (c *crashChild) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
}

func (c *crashChild) readReports(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), crashLinePrefix)
		if !ok {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		id, _ := strconv.ParseInt(f[1], 10, 64)
		attempt, _ := strconv.Atoi(f[2])
		c.mu.Lock()
		switch {
		case f[0] == "S" && len(f) == 4:
			c.inflight++
			c.started[id] = append(c.started[id], attempt)
			c.kinds[id] = f[3]
		case f[0] == "E":
			c.inflight--
		}
		c.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<20 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// crashFleet starts child workers for one queue and kills every one of them
// when the test ends, on every exit path.
type crashFleet struct {
	t           testing.TB
	url, queue  string
	concurrency int

	mu       sync.Mutex
	children []*crashChild
}

func newCrashFleet(t testing.TB, queue string, concurrency int) *crashFleet {
	f := &crashFleet{t: t, url: pgtest.URL(t), queue: queue, concurrency: concurrency}
	t.Cleanup(f.stopAll)
	return f
}

func (f *crashFleet) spawn() *crashChild {
	f.t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		crashEnvWorker+"=1",
		crashEnvURL+"="+f.url,
		crashEnvQueue+"="+f.queue,
		crashEnvConcurrency+"="+strconv.Itoa(f.concurrency),
	)
	c := &crashChild{cmd: cmd, done: make(chan struct{}), started: map[int64][]int{}, kinds: map[int64]string{}}
	cmd.Stderr = &c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	c.stdin = stdin
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := cmd.Start(); err != nil {
		f.t.Fatalf("start child worker: %v", err)
	}
	f.children = append(f.children, c)
	go func() {
		c.readReports(stdout) // all reads before Wait, as os/exec requires
		_ = cmd.Wait()
		close(c.done)
	}()
	return c
}

func (f *crashFleet) all() []*crashChild {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*crashChild(nil), f.children...)
}

// stopAll kills every child still running and waits for each to be reaped.
func (f *crashFleet) stopAll() {
	for _, c := range f.all() {
		c.kill()
		_ = c.stdin.Close()
	}
	for _, c := range f.all() {
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			f.t.Errorf("child worker %d not reaped 30s after SIGKILL", c.cmd.Process.Pid)
		}
	}
}

// checkExits fails the test for a child that ended other than by SIGKILL
// (an error, a panic, a race report exit) or reported a data race.
func (f *crashFleet) checkExits(t *testing.T) {
	t.Helper()
	for _, c := range f.all() {
		<-c.done
		errOut := c.stderr.String()
		if !c.diedOfSIGKILL() {
			t.Errorf("child worker %d ended with %v, not SIGKILL; stderr:\n%s", c.cmd.Process.Pid, c.cmd.ProcessState, tail(errOut, 4000))
		}
		if strings.Contains(errOut, "DATA RACE") || strings.Contains(errOut, "panic:") {
			t.Errorf("child worker %d reported a race or panic:\n%s", c.cmd.Process.Pid, tail(errOut, 8000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func crashMessages(t testing.TB, from, to int, kindOf func(n int) string) []store.NewMessage {
	t.Helper()
	msgs := make([]store.NewMessage, 0, to-from)
	for n := from; n < to; n++ {
		h, err := json.Marshal(map[string]string{store.HeaderKind: kindOf(n)})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, store.NewMessage{Payload: json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`), Headers: h})
	}
	return msgs
}

func queryInt(ctx context.Context, t testing.TB, s *store.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// hasErrorKeys reports whether a dead-letter block carries any of the
// recorded-failure keys, and whether it carries all that every failure has
// (a plain error has no backtrace, so the block has none).
func hasErrorKeys(b map[string]any) (some, all bool) {
	all = true
	for _, k := range []string{"error_class", "error_message", "backtrace", "error_attempt", "error_recorded_at"} {
		_, ok := b[k]
		some = some || ok
		if k != "backtrace" {
			all = all && ok
		}
	}
	return some, all
}

// lockDLQ holds the dead-letter writes into dlq, so that a worker's
// writes into it wait: the test then chooses what happens to the worker
// (or its connection) before they commit.
func lockDLQ(t testing.TB, s *store.Store, dlq string) *pgtest.HeldLock {
	t.Helper()
	return pgtest.HoldLock(t, s, "q_"+dlq)
}

// endWaiting ends the pending writes held by lock of a worker that died,
// as if it had died a moment before sending them, or whose connection was
// lost, and returns how many there were. (The server would otherwise run
// a statement it already received once the lock goes.)
func endWaiting(t testing.TB, s *store.Store, lock *pgtest.HeldLock) int {
	t.Helper()
	pids := lock.Waiting()
	for _, pid := range pids {
		if _, err := s.Pool().Exec(testContext(t), `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
	}
	return len(pids)
}

func first(xs []int, n int) []int { return xs[:min(len(xs), n)] }

// crashDiagnostics says where the unsettled messages are.
func crashDiagnostics(ctx context.Context, t testing.TB, s *store.Store, q string) string {
	var b strings.Builder
	rows, err := s.Pool().Query(ctx, `SELECT coalesce(headers->>'pgbus_kind', '?'), read_ct, vt > clock_timestamp(), count(*)
		FROM pgmq."q_`+q+`" GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for rows.Next() {
		var kind string
		var readCt, n int
		var hidden bool
		if err := rows.Scan(&kind, &readCt, &hidden, &n); err != nil {
			return err.Error()
		}
		lines = append(lines, fmt.Sprintf("  queue: kind %s read_ct %d hidden %v: %d", kind, readCt, hidden, n))
	}
	rows.Close()
	sort.Strings(lines)
	b.WriteString(strings.Join(lines, "\n"))
	fmt.Fprintf(&b, "\n  archived %d, DLQ %d, DLQ archive %d",
		queryInt(ctx, t, s, `SELECT count(*) FROM pgmq."a_`+q+`"`),
		queryInt(ctx, t, s, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`),
		queryInt(ctx, t, s, `SELECT count(*) FROM pgmq."a_`+q+`_dlq"`))
	return b.String()
}
