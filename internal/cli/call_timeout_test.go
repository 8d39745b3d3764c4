package cli_test

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The database call timeout of pgbus work reaches its workers, the
// environment's over the file's: once the connections they hold stop
// answering, a call gives up after it, says so, and the workers go on
// through new connections.
func TestWorkTakesTheDatabaseCallTimeout(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "frozen")
	proxy := pgtest.NewFreezingProxy(t, d.url)
	cfg := writeFile(t, "pgbus.yaml", "worker:\n  database_call_timeout: 45s\n")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "work", "--config", cfg, "--database-url", proxy.URL(),
		"--queue", "frozen", "--handler", "demo", "--poll-interval", "100ms", "--log-format", "json", "--log-level", "debug")
	cmd.Env = append(baseEnv(), "PGBUS_DATABASE_CALL_TIMEOUT=1s")
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	d.ok(t, "send", "frozen", `{"simulate": "ok"}`)
	pgtest.Eventually(t, 2*time.Minute, "the first message worked", func() bool {
		return d.count(t, `SELECT count(*) FROM pgmq.a_frozen`) == 1
	})

	proxy.Freeze()
	// Each call given up is told at debug level with its limit: the
	// environment's 1s, or 1s and the wait of the listener's check, never
	// the file's 45s.
	pgtest.Eventually(t, 2*time.Minute, "a call given up after the database call timeout of the environment", func() bool {
		return len(givenUpAfter(logs.String())) > 0
	})
	for _, limit := range givenUpAfter(logs.String()) {
		if limit >= 45*time.Second {
			t.Errorf("a call was given up after %s, the file's timeout, not the environment's 1s:\n%s", limit, logs.String())
		}
	}
	d.ok(t, "send", "frozen", `{"simulate": "ok"}`)
	pgtest.Eventually(t, 2*time.Minute, "the message sent after the freeze worked through a new connection", func() bool {
		return d.count(t, `SELECT count(*) FROM pgmq.a_frozen`) == 2
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
}

// A command whose connection stops answering midway (a failover behind a
// proxy, a cut path) is not left waiting for TCP: it gives up after the
// database call timeout of the environment, saying so, of kind
// unavailable, with pgbus health to check next; the same command then
// works.
func TestCommandGivesUpOnAFrozenConnection(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "frozen_list")
	proxy := pgtest.NewFreezingProxy(t, d.url)
	env := []string{"DATABASE_URL=" + proxy.URL(), "PGBUS_DATABASE_CALL_TIMEOUT=1s"}
	args := []string{"dlq", "list", "--queue", "frozen_list", "--json"}
	proxy.FreezeWhenSent("frozen_list") // once connected, at the list's first statement

	r := pgbus(t, env, args...)
	e := decodeErrorJSON(t, r)
	if r.code == 0 || e.ExitCode != r.code || e.Kind != "unavailable" || !strings.Contains(e.Error, "the database did not answer within 1s (database call timeout)") ||
		!slices.ContainsFunc(e.Next, func(n nextStep) bool { return n.Command == "pgbus health" }) {
		t.Errorf("pgbus %s through a connection that froze: exit %d, %+v; want the database call timeout of the environment said, of kind unavailable, with pgbus health next",
			strings.Join(args, " "), r.code, e)
	}
	if r := pgbus(t, env, args...); r.code != 0 {
		t.Errorf("pgbus %s once the path is new: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
}

// givenUpAfter lists the limits of the calls the log says were given up
// for want of an answer.
func givenUpAfter(log string) []time.Duration {
	var limits []time.Duration
	for _, m := range givenUpLine.FindAllStringSubmatch(log, -1) {
		if d, err := time.ParseDuration(m[1]); err == nil {
			limits = append(limits, d)
		}
	}
	return limits
}

var givenUpLine = regexp.MustCompile(`no answer within ([0-9.a-z]+) \(the database call timeout\)`)

// A database call timeout under a second, or over an hour, stops every
// command that runs workers, serves or reads the database before it
// starts, naming the setting (its flag, when the command line gave it),
// where it came from and its range.
func TestDatabaseCallTimeoutOutOfRange(t *testing.T) {
	t.Parallel()
	unreachable := "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	short := writeFile(t, "pgbus.yaml", "worker:\n  database_call_timeout: 200ms\n")
	work := []string{"work", "--queue", "x", "--handler", "demo"}
	cases := []struct {
		name string
		env  []string
		args []string
		says string
	}{
		{"work flag", nil, append(work, "--database-call-timeout", "500ms"), "--database-call-timeout 500ms is out of range 1s..1h: it is how long a database call of the workers, tools, pages or commands may go unanswered"},
		{"work flag zero", nil, append(work, "--database-call-timeout", "0s"), "--database-call-timeout 0s is out of range 1s..1h"},
		{"work flag too long", nil, append(work, "--database-call-timeout", "2h"), "--database-call-timeout 2h is out of range 1s..1h"},
		{"work environment", []string{"PGBUS_DATABASE_CALL_TIMEOUT=10ms"}, work, "database call timeout 10ms (from environment variable PGBUS_DATABASE_CALL_TIMEOUT) is out of range 1s..1h"},
		{"work environment not a duration", []string{"PGBUS_DATABASE_CALL_TIMEOUT=30"}, work, `environment variable PGBUS_DATABASE_CALL_TIMEOUT="30": not a duration`},
		{"work file", nil, append([]string{"--config", short}, work...), "worker.database_call_timeout: 200ms is out of range 1s..1h"},
		{"serve flag", nil, []string{"serve", "--transport", "http", "--queue", "x", "--handler", "demo", "--database-call-timeout", "999ms"}, "--database-call-timeout 999ms is out of range 1s..1h"},
		{"demo flag", nil, []string{"demo", "--database-call-timeout", "100ms"}, "--database-call-timeout 100ms is out of range 1s..1h"},
		{"demo environment", []string{"PGBUS_DATABASE_CALL_TIMEOUT=0s"}, []string{"demo"}, "database call timeout 0s (from environment variable PGBUS_DATABASE_CALL_TIMEOUT) is out of range 1s..1h"},
		{"dashboard flag", nil, []string{"dashboard", "--database-call-timeout", "900ms"}, "--database-call-timeout 900ms is out of range 1s..1h"},
		{"command environment", []string{"PGBUS_DATABASE_CALL_TIMEOUT=10ms"}, []string{"dlq", "list"}, "database call timeout 10ms (from environment variable PGBUS_DATABASE_CALL_TIMEOUT) is out of range 1s..1h"},
		{"command file", nil, []string{"--config", short, "queue", "stats"}, "worker.database_call_timeout: 200ms is out of range 1s..1h"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := usageRun(t, append([]string{unreachable}, c.env...), c.args...)
			if r.code != 2 || !strings.HasPrefix(r.stderr, "pgbus: ") || !strings.Contains(r.stderr, c.says) {
				t.Errorf("pgbus %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.says)
			}
		})
	}
}
