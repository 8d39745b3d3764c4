package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
)

// binary is the pgbus binary built once for these tests with the race
// detector: they run it as a person or a script would. quickBinary is the
// same command built without it, which starts several times faster: pgbus
// (binaryFor) runs it for the short commands that start no goroutines of
// their own.
var binary, quickBinary string

func TestMain(m *testing.M) { os.Exit(pgtest.MainWithBinaries(m, &binary, &quickBinary)) }

// raceCommands run goroutines of their own (workers, servers and their
// HTTP handlers, the demo's and the benchmark's workers): the race
// detector watches them.
var raceCommands = map[string]bool{"work": true, "serve": true, "dashboard": true, "demo": true, "bench": true}

// binaryFor returns the binary to run args with: the quick one for a help
// page; the race one for the commands of raceCommands and for a command
// line that starts with a flag (its command is further on); the quick one
// for the rest, which only parse, connect, query and print.
func binaryFor(args []string) string {
	if slices.Contains(args, "--help") {
		return quickBinary
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || raceCommands[args[0]] {
		return binary
	}
	return quickBinary
}

type run struct {
	stdout, stderr string
	code           int
}

// pgbus runs the binary with a clean environment: no DATABASE_URL unless the
// test passes one.
func pgbus(t *testing.T, env []string, args ...string) run {
	t.Helper()
	return pgbusIn(t, env, "", args...)
}

// baseEnv is the environment every run starts from. GORACE: a binary built
// with -race sleeps a second at exit unless told not to; a race still makes
// it exit with status 66.
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(), "GORACE=atexit_sleep_ms=0"}
}

func migrationCount(t *testing.T) int {
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

func checkOneSchema(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, versions int
	err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM pgbus.schema_migrations`).Scan(&rows, &versions)
	if err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(t); rows != want || versions != want {
		t.Fatalf("schema_migrations has %d rows (%d versions), want %d once each", rows, versions, want)
	}
	var metas int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'pgmq' AND tablename = 'meta'`).Scan(&metas); err != nil || metas != 1 {
		t.Fatalf("pgmq.meta tables: %d (%v), want 1", metas, err)
	}
}

// Two pgbus migrate processes started at the same moment both succeed and
// leave one schema, on a server given by URL and on the embedded default.
func TestMigrateConcurrentProcesses(t *testing.T) {
	t.Parallel()
	t.Run("database-url", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		runs := together(t, 2, func() run { return pgbus(t, nil, "migrate", "--database-url", url) })
		for _, r := range runs {
			if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("schema version %d", migrationCount(t))) {
				t.Fatalf("migrate exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
		}
		checkOneSchema(t, url)
		again := pgbus(t, []string{"DATABASE_URL=" + url}, "migrate")
		if again.code != 0 || !strings.Contains(again.stdout, "(0 applied now)") {
			t.Fatalf("third migrate: exit %d, %q", again.code, again.stdout)
		}
		// --json, for a deploy's script, with the version pgbus version
		// --json says this pgbus migrates to.
		var st, v struct {
			SchemaVersion int    `json:"schema_version"`
			Applied       int    `json:"applied"`
			ThisPgbus     int    `json:"this_pgbus_schema_version"`
			Newer         bool   `json:"newer"`
			Layout        string `json:"pgmq_layout"`
			Queues        int    `json:"queues"`
		}
		r := pgbus(t, []string{"DATABASE_URL=" + url}, "migrate", "--json")
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 {
			t.Fatalf("migrate --json: exit %d, %v\n%s", r.code, err, r.stdout)
		}
		if err := json.Unmarshal([]byte(pgbus(t, nil, "version", "--json").stdout), &v); err != nil {
			t.Fatal(err)
		}
		n := migrationCount(t)
		if st.SchemaVersion != n || st.Applied != 0 || st.ThisPgbus != n || st.Newer || st.Layout != "built_in" || st.Queues != 0 || v.SchemaVersion != n {
			t.Errorf("migrate --json = %+v, version --json's schema version %d; want version %d, nothing applied, the built-in layout, no queue", st, v.SchemaVersion, n)
		}
	})
	t.Run("embedded", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "pgbus-cli-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		runs := together(t, 2, func() run { return pgbus(t, []string{"PGBUS_DATA_DIR=" + dir}, "migrate") })
		// Each migration is applied by one of them: the two may share the
		// work, one migration each at a time, but never both apply one.
		applied := 0
		for _, r := range runs {
			if r.code != 0 || !strings.Contains(r.stdout, "embedded PostgreSQL in "+dir) {
				t.Fatalf("migrate exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			var n int
			i := strings.Index(r.stdout, " applied now)")
			j := strings.LastIndex(r.stdout[:max(i, 0)], "(")
			if i < 0 || j < 0 {
				t.Fatalf("migrate does not say how many it applied: %q", r.stdout)
			}
			if _, err := fmt.Sscan(r.stdout[j+1:i], &n); err != nil {
				t.Fatalf("applied count in %q: %v", r.stdout, err)
			}
			applied += n
		}
		if applied != migrationCount(t) {
			t.Fatalf("the processes applied %d migrations in all, want each of the %d once:\n%v", applied, migrationCount(t), runs)
		}
		if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); !os.IsNotExist(err) {
			t.Fatalf("the embedded server is still running after both processes exited (%v)", err)
		}
		r := pgbus(t, nil, "migrate", "--data-dir", dir)
		if r.code != 0 || !strings.Contains(r.stdout, "(0 applied now)") {
			t.Fatalf("migrate on the reused cluster: exit %d %q %q", r.code, r.stdout, r.stderr)
		}
	})
}

func together(t *testing.T, n int, fn func() run) []run {
	t.Helper()
	out := make([]run, n)
	var ready, wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range out {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-gate
			out[i] = fn()
		}()
	}
	ready.Wait()
	close(gate)
	wg.Wait()
	return out
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"unknown flag":    {"migrate", "--no-such-flag"},
		"unknown command": {"frobnicate"},
		"extra argument":  {"migrate", "extra"},
		"bad log level":   {"migrate", "--log-level", "loud"},
		"bad log format":  {"migrate", "--log-format", "xml"},
	}
	for label, args := range cases {
		r := pgbus(t, nil, args...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", label, r.code, r.stderr)
		}
		if !strings.HasPrefix(r.stderr, "pgbus: ") || r.stdout != "" {
			t.Errorf("%s: stderr %q stdout %q; want one error line on stderr and nothing on stdout", label, r.stderr, r.stdout)
		}
	}
}

func TestBadDatabaseURL(t *testing.T) {
	t.Parallel()
	r := pgbus(t, nil, "migrate", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if r.code != 1 || !strings.Contains(r.stderr, "--database-url's host and port") {
		t.Fatalf("exit %d stderr %q; want 1 and advice about the --database-url given", r.code, r.stderr)
	}
	// A URL that cannot be read is the caller's input, wrong: a usage
	// error (exit 2) saying what a URL looks like, its password hidden.
	for _, url := range []string{"::not a url::", "not a url", "postgres://u:Secr3tPW@[::1", "postgres://u:Pa@Secr3tPW@127.0.0.1:1/db"} {
		r = pgbus(t, nil, "queues", "--database-url", url)
		if r.code != 2 || !strings.Contains(r.stderr, "database URL") ||
			!(strings.Contains(r.stderr, "write it as postgres://USER@HOST:PORT/DATABASE") || strings.Contains(r.stderr, "percent-encode an @")) {
			t.Errorf("--database-url %q: exit %d stderr %q; want 2 and how to write a database URL", url, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "Secr3tPW") {
			t.Errorf("--database-url %q: stderr shows the password: %q", url, r.stderr)
		}
	}
	r = pgbus(t, []string{"DATABASE_URL=not a url"}, "work", "--queue", "x", "--handler", "demo")
	// The example is shown as written: the redaction of passwords in URLs
	// must not take the example's placeholder for one.
	if r.code != 2 || !strings.Contains(r.stderr, "write it as postgres://USER@HOST:PORT/DATABASE") || !strings.Contains(r.stderr, "(USER:PASSWORD@HOST)") {
		t.Errorf("DATABASE_URL malformed, pgbus work: exit %d stderr %q; want 2 and how to write a database URL", r.code, r.stderr)
	}
}

// pgbus help config prints the configuration file's help, and so it does
// while the configuration file it is needed for, or another setting, is
// wrong: the commands that only print (help, completion) read no setting.
func TestHelpConfig(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(bad, []byte("queues:\n  orders:\n    concurrancy: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{nil, {"PGBUS_CONFIG=" + bad}, {"PGBUS_CONFIG=" + filepath.Join(t.TempDir(), "missing.yaml")}, {"PGBUS_LOG_LEVEL=loud"}} {
		r := pgbus(t, env, "help", "config")
		if r.code != 0 || !strings.Contains(r.stdout, "Every setting is taken from the first of:") || !strings.Contains(r.stdout, "  type: exec\n") {
			t.Fatalf("pgbus help config with %v: exit %d\nstdout: %s\nstderr: %s", env, r.code, r.stdout, r.stderr)
		}
		for _, args := range [][]string{{"help", "work"}, {"completion", "bash"}} {
			if r := pgbus(t, env, args...); r.code != 0 || r.stdout == "" {
				t.Fatalf("pgbus %s with %v: exit %d\nstderr: %s", strings.Join(args, " "), env, r.code, r.stderr)
			}
		}
	}
	// A topic pgbus does not know is a usage error, as a mistyped command
	// is, not the usage with exit 0.
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "dlq", "nosuch"}} {
		if r := pgbus(t, nil, args...); r.code != 2 || !strings.Contains(r.stderr, "no help topic") || r.stdout != "" {
			t.Fatalf("pgbus %s: exit %d\nstdout: %s\nstderr: %s; want exit 2 and the error alone", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if r := pgbus(t, nil, "help", "dlq", "retry"); r.code != 0 || !strings.Contains(r.stdout, "Move dead messages back") {
		t.Fatalf("pgbus help dlq retry: exit %d\nstdout: %s", r.code, r.stdout)
	}
	if r := pgbus(t, nil, "help"); r.code != 0 || !strings.Contains(r.stdout, "Available Commands") {
		t.Fatalf("pgbus help: exit %d\nstdout: %s", r.code, r.stdout)
	}
	// Every other command still stops at the bad file.
	if r := pgbus(t, []string{"PGBUS_CONFIG=" + bad}, "queues"); r.code != 2 || !strings.Contains(r.stderr, "concurrancy") {
		t.Fatalf("pgbus queues with a bad file: exit %d, stderr %q; want exit 2 naming the key", r.code, r.stderr)
	}
}
