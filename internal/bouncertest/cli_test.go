package bouncertest_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	b := bouncertest.Start(t, pgtest.NewDatabase(t))
	run := func(env []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
			"GORACE=atexit_sleep_ms=0", "DATABASE_URL=" + b.URL()}, env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("pgbus %s through pgbouncer: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	run(nil, "migrate")
	run(nil, "queue", "create", "orders")
	for range 3 {
		run(nil, "send", "orders", `{"order_id": 42}`, "--kind", "charge_card")
	}
	out := run(nil, "work", "--queue", "orders", "--handler", "demo", "--for", "8s")
	if n := strings.Count(out, "notifications do not reach this process"); n != 1 {
		t.Errorf("pgbus work through pgbouncer logged the fall-back to polling %d times, want once:\n%s", n, out)
	}
	out = run([]string{"PGBUS_NO_LISTEN=1"}, "work", "--queue", "orders", "--handler", "demo", "--for", "2s")
	if !strings.Contains(out, "notifications are off") || strings.Contains(out, "do not reach") {
		t.Errorf("pgbus work with PGBUS_NO_LISTEN=1 did not say it only polls:\n%s", out)
	}
	cfg := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("worker:\n  no_listen: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = run(nil, "work", "--config", cfg, "--queue", "orders", "--handler", "demo", "--for", "2s")
	if !strings.Contains(out, "notifications are off") {
		t.Errorf("pgbus work with worker.no_listen in its file did not say it only polls:\n%s", out)
	}
	for _, args := range [][]string{{"queues"}, {"health"}, {"dlq", "summary"}, {"workers"}} {
		run(nil, args...)
	}
}
