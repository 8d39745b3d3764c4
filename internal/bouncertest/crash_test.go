package bouncertest

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A pgbouncer that exits on its own, as PgBouncer 1.18 does on a cancel
// request whose client closed early (killed here from outside the
// harness), is started again on its port: a connection through it is
// taken again, and the harness says it crashed, for the message of a
// failure of the test, which a crash seen as pgbus's failure misled.
func TestCrashedBouncerIsStartedAgain(t *testing.T) {
	t.Parallel()
	b := Start(t, pgtest.URL(t))
	b.mu.Lock()
	pid := b.proc.cmd.Process.Pid
	b.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the harness to notice pgbouncer's crash", func() bool { return len(b.Crashes()) == 1 })
	b.AwaitUp(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, b.URL())
	if err != nil {
		t.Fatalf("connect through pgbouncer started again after its crash: %v", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("a statement through pgbouncer started again after its crash: %v", err)
	}
	if w := b.CrashWords(); !strings.Contains(w, "PgBouncer itself crashed 1 time during the test") || !strings.Contains(w, "signal: killed") {
		t.Errorf("the words of its crash: %q; want them to say it crashed once, and how", w)
	}

	// The harness's own kill is no crash.
	b.Restart(t)
	if n := len(b.Crashes()); n != 1 {
		t.Errorf("%d crashes after the harness restarted pgbouncer itself; want the one crash still", n)
	}
}
