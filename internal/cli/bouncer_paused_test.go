package cli_test

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// TestCommandsOfAPausedBouncer: PgBouncer takes the connection of a
// command but answers none of its statements while its database is paused
// (PAUSE), until its query_wait_timeout, two minutes. The command gives up
// at the database call timeout instead, saying the server or a pooler in
// front of it took the connection and did not answer, and exits 1 as for
// a database that does not answer. A regression waits for PgBouncer, past
// the context of the command here, which fails the test.
func TestCommandsOfAPausedBouncer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	b := bouncertest.Start(t, dbURL)
	if r := pgbus(t, []string{"DATABASE_URL=" + b.URL()}, "migrate"); r.code != 0 {
		t.Fatalf("migrate through pgbouncer: exit %d\n%s", r.code, r.stderr)
	}
	b.Pause(t)
	for _, args := range [][]string{{"health", "--fail-on", "degraded"}, {"queues"}} {
		ctx, cancel := context.WithTimeout(pgtest.Context(t), 90*time.Second)
		cmd := exec.CommandContext(ctx, quickBinary, args...)
		cmd.Env = append(baseEnv(), "DATABASE_URL="+b.URL(), "PGBUS_DATABASE_CALL_TIMEOUT=1s")
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("pgbus %s through a paused pgbouncer ignored its database call timeout of 1s:\n%s", strings.Join(args, " "), out)
		}
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 1 {
			t.Errorf("pgbus %s through a paused pgbouncer: %v, want exit 1\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(string(out), "accepted the connection but did not answer within 1s") || strings.Contains(string(out), "check DATABASE_URL") {
			t.Errorf("pgbus %s through a paused pgbouncer does not say its connection was taken and not answered within 1s:\n%s", strings.Join(args, " "), out)
		}
	}

	// Interrupted, the command ends without waiting for its call timeout
	// or for PgBouncer.
	ctx, cancel := context.WithTimeout(pgtest.Context(t), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, quickBinary, "queues")
	cmd.Env = append(baseEnv(), "DATABASE_URL="+b.URL(), "PGBUS_DATABASE_CALL_TIMEOUT=10m")
	var out pgtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	logins := strings.Count(b.Log(), "login attempt")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the command's login to pgbouncer", func() bool { return strings.Count(b.Log(), "login attempt") > logins })
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("pgbus queues through a paused pgbouncer did not end at SIGINT:\n%s", out.String())
	}
	if err == nil {
		t.Errorf("pgbus queues through a paused pgbouncer succeeded after SIGINT:\n%s", out.String())
	}
}

// TestHealthOfAPausedBouncer: pgbus health, asked when something is wrong,
// gives up on a paused PgBouncer, which takes its connection and answers
// none of its statements, at the health check's own bound, shorter than
// the database call timeout (30s by default), and says that the pooler may
// be paused and what resumes it.
func TestHealthOfAPausedBouncer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	b := bouncertest.Start(t, dbURL)
	if r := pgbus(t, []string{"DATABASE_URL=" + b.URL()}, "migrate"); r.code != 0 {
		t.Fatalf("migrate through pgbouncer: exit %d\n%s", r.code, r.stderr)
	}
	b.Pause(t)
	r := pgbus(t, []string{"DATABASE_URL=" + b.URL()}, "health")
	if r.code != 1 {
		t.Errorf("pgbus health through a paused pgbouncer: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"did not answer within " + ops.HealthCheckTimeout.String(), "paused", "RESUME"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("pgbus health through a paused pgbouncer does not say %q:\n%s", want, r.stderr)
		}
	}
}
