package bouncertest_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// TestCommandsThroughBouncer runs the pgbus command with DATABASE_URL
// pointing at PgBouncer in transaction mode, as the README's "Behind
// PgBouncer" section says: it migrates, sends and works; pgbus work finds
// that notifications do not arrive and says it polls, or with
// PGBUS_NO_LISTEN=1 or worker.no_listen in its file does not listen at all.
func TestCommandsThroughBouncer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	b := bouncertest.Start(t, dbURL)
	command := func(ctx context.Context, env []string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
			"GORACE=atexit_sleep_ms=0", "DATABASE_URL=" + b.URL()}, env...)
		return cmd
	}
	runOnce := func(env []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := command(ctx, env, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	// Each command waits for PgBouncer to be started again if it crashed
	// (PgBouncer 1.18 does, on a cancel request whose client closed its
	// connection early: the workers' stop sends some); one that only
	// reads, or migrates, which does nothing the second time, is run
	// again once when PgBouncer crashed under it.
	again := map[string]bool{"migrate": true, "queues": true, "health": true, "dlq": true, "workers": true}
	run := func(env []string, args ...string) string {
		t.Helper()
		b.AwaitUp(t)
		crashes := len(b.Crashes())
		out, err := runOnce(env, args...)
		if err != nil && again[args[0]] {
			b.AwaitUp(t)
			if len(b.Crashes()) > crashes {
				t.Logf("pgbus %s through pgbouncer, which crashed under it: %v\n%s; running it again", strings.Join(args, " "), err, out)
				out, err = runOnce(env, args...)
			}
		}
		if err != nil {
			t.Fatalf("pgbus %s through pgbouncer: %v\n%s%s", strings.Join(args, " "), err, out, b.CrashWords())
		}
		return out
	}
	run(nil, "migrate")
	run(nil, "queue", "create", "orders")
	send := func() {
		t.Helper()
		for range 3 {
			run(nil, "send", "orders", `{"order_id": 42}`, "--kind", "charge_card")
		}
	}
	send()
	// Each pgbus work runs until what the test looks for is done, then
	// stops: a fixed --for, counted from the process's start, may end on a
	// busy machine before the listener's check is over, or before the
	// workers start at all.
	work := func(env []string, args ...string) (logs *pgtest.SyncBuffer, stop func() string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := command(ctx, env, append([]string{"work", "--queue", "orders", "--handler", "demo"}, args...)...)
		logs = &pgtest.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); cancel() })
		return logs, func() string {
			t.Helper()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("pgbus work %s through pgbouncer, stopped: %v\n%s%s", strings.Join(args, " "), err, logs.String(), b.CrashWords())
			}
			return logs.String()
		}
	}
	// It falls back to polling, once, and its polls take the messages
	// sent before and those sent after.
	direct := pgtest.OpenStore(t, dbURL)
	const fallBack = "notifications do not reach this process"
	logs, stop := work(nil)
	pgtest.Eventually(t, time.Minute, "the fall-back to polling and the first messages worked", func() bool {
		return strings.Contains(logs.String(), fallBack) && pgtest.Archived(t, direct, "orders") == 3
	})
	send()
	pgtest.Eventually(t, time.Minute, "the messages sent after the fall-back worked", func() bool { return pgtest.Archived(t, direct, "orders") == 6 })
	out := stop()
	if n := strings.Count(out, fallBack); n != 1 {
		t.Errorf("pgbus work through pgbouncer logged the fall-back to polling %d times, want once:\n%s", n, out)
	}
	logs, stop = work([]string{"PGBUS_NO_LISTEN=1"})
	pgtest.Eventually(t, time.Minute, "pgbus work with PGBUS_NO_LISTEN=1 to say it only polls", func() bool { return strings.Contains(logs.String(), "notifications are off") })
	if out := stop(); strings.Contains(out, "do not reach") {
		t.Errorf("pgbus work with PGBUS_NO_LISTEN=1 checked whether notifications reach it:\n%s", out)
	}
	cfg := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("worker:\n  no_listen: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, stop = work(nil, "--config", cfg)
	pgtest.Eventually(t, time.Minute, "pgbus work with worker.no_listen in its file to say it only polls", func() bool { return strings.Contains(logs.String(), "notifications are off") })
	stop()
	for _, args := range [][]string{{"queues"}, {"health"}, {"dlq", "summary"}, {"workers"}} {
		run(nil, args...)
	}
}
