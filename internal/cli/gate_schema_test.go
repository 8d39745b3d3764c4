package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// stoppedWithSchema makes a private cluster whose database is migrated,
// then changed by edit (SQL on pgbus's record of migrations), and stopped.
// It returns the cluster's directory, to start it again, and its URL.
func stoppedWithSchema(t *testing.T, edit string) (dir, url string) {
	t.Helper()
	dir, cluster := pgtest.PrivateCluster(t)
	url = cluster.URL()
	s, err := store.Open(pgtest.Context(t), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(pgtest.Context(t)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if edit != "" {
		pgtest.Exec(t, url, edit)
	}
	if err := cluster.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir, url
}

// oldSchema is the edit that makes the schema one version older than
// this pgbus's.
func oldSchema(t *testing.T) string {
	return fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version = %d`, migrationCount(t))
}

// startDashboard runs pgbus dashboard with args on a free loopback port
// until the test ends, and returns its getter and its log.
func startDashboard(t *testing.T, args ...string) (func(path, bearer string) (int, string, string), *syncBuffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"dashboard", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	base, logs := startListening(t, cmd, "pgbus dashboard listening", "url")
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return getter(t, strings.TrimSuffix(base, "/")), logs
}

// A --read-only dashboard started while its database was down, which then
// comes up with a schema older than this pgbus (that it may not migrate),
// holds its calls: /readyz answers 503 with the reason, which says the
// schema is not ready and which version it needs, until it is. It
// answered 200, DEGRADED health_check_slow, "though the database
// answers", as every call was refused.
func TestReadyzWhileTheSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	dir, url := stoppedWithSchema(t, oldSchema(t))
	get, logs := startDashboard(t, "--read-only", "--database-url", url)
	pgtest.StartCluster(t, dir)

	// Once the database answers, the dashboard checks the schema (saying
	// it is readying it meanwhile), then finds it old.
	want := fmt.Sprintf("this pgbus needs %d", migrationCount(t))
	var code int
	var body string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		code, body, _ = get("/readyz", "")
		if strings.Contains(body, want) || code == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"ready":false`) || !strings.Contains(body, `"code":"schema_not_ready"`) || !strings.Contains(body, want) {
		t.Fatalf("/readyz while the schema is older than this pgbus: %d %s\nwant 503, not ready, reason schema_not_ready saying %q\nlog:\n%s", code, body, want, logs.String())
	}
}

// While a dashboard started with its database down holds its calls for
// the schema (older than a --read-only dashboard may migrate), its pages
// and /live answer 503, the pages saying why and to reload, and the log
// says so at most once a minute. They answered 500 and logged an ERROR
// at every request.
func TestDashboardPagesWhileTheSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	dir, url := stoppedWithSchema(t, oldSchema(t))
	get, logs := startDashboard(t, "--read-only", "--database-url", url)
	pgtest.StartCluster(t, dir)

	want := fmt.Sprintf("this pgbus needs %d", migrationCount(t))
	pgtest.Eventually(t, 2*time.Minute, "the overview to say why the schema is not ready", func() bool {
		_, page, _ := get("/", "")
		return strings.Contains(page, want)
	})
	for _, path := range []string{"/", "/dlq", "/", "/dlq"} {
		code, page, _ := get(path, "")
		if code != http.StatusServiceUnavailable || !strings.Contains(page, want) || !strings.Contains(page, "Reload this page in a moment") {
			t.Errorf("GET %s while the schema is not ready: %d, want 503 saying %q and to reload:\n%s", path, code, want, page)
		}
	}
	for range 2 {
		if code, body, _ := get("/live", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
			t.Errorf("GET /live while the schema is not ready: %d %s, want 503 saying %q", code, body, want)
		}
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("the dashboard logged an error for a schema not ready yet:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "dashboard: the database is unavailable") + strings.Count(logs.String(), "dashboard: live counts failed"); n > 1 {
		t.Errorf("the dashboard logged the schema not ready %d times, want at most once a minute:\n%s", n, logs.String())
	}
}

// newerSchema is the edit that makes the schema one a newer pgbus
// migrated, whose record lacks this pgbus's versions: only another
// binary can use it.
func newerSchema(t *testing.T) string {
	n := migrationCount(t)
	return fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus'); DELETE FROM pgbus.schema_migrations WHERE version <= %d`, n+1, n)
}

// lastLine is the last line of text that is not empty, without its time
// when it is a JSON log line.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	last := lines[len(lines)-1]
	var rec map[string]any
	if json.Unmarshal([]byte(last), &rec) == nil {
		delete(rec, "time")
		b, _ := json.Marshal(rec)
		return string(b)
	}
	return last
}

// A dashboard started while its database was down, which then comes up
// with a schema a newer pgbus migrated that this one cannot read, ends as
// it would have at start: the same error, saying to upgrade this pgbus,
// and the same exit code. No wait can mend it, and it kept trying every
// 5 seconds for as long as it ran.
func TestStartedWhileDownEndsOnASchemaOnlyAnotherPgbusReads(t *testing.T) {
	t.Parallel()
	dir, url := stoppedWithSchema(t, newerSchema(t))
	cmd := exec.Command(binary, "dashboard", "--addr", "127.0.0.1:0", "--log-format", "json", "--database-url", url)
	cmd.Env = append(baseEnv(), "HOME=/nonexistent")
	_, logs := startListening(t, cmd, "pgbus dashboard listening", "url")
	exited := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pgtest.StartCluster(t, dir)
	var code int
	select {
	case code = <-exited:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the dashboard kept running on a schema only a newer pgbus reads:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "migrated by a newer pgbus") {
		t.Fatalf("the dashboard ended without saying the schema was migrated by a newer pgbus:\n%s", logs.String())
	}
	atStart := runBinary(t, binary, nil, "", "dashboard", "--addr", "127.0.0.1:0", "--log-format", "json", "--database-url", url)
	if code != atStart.code || lastLine(logs.String()) != lastLine(atStart.stderr) || !strings.Contains(lastLine(atStart.stderr), "upgrade this pgbus") {
		t.Fatalf("once the database answered: exit %d, %s\nat start: exit %d, %s\nwant the same, saying to upgrade this pgbus", code, lastLine(logs.String()), atStart.code, lastLine(atStart.stderr))
	}
}

// pgbus serve started while its database was down, which then comes up
// with PGMQ's tables missing under the pgbus schema, refuses calls with
// the step it names at start, the migration that installs PGMQ from its
// script, in the words of the front end, and names no Go function. It
// listed only pgbus_health, and its text named InstallPGMQ.
func TestServeWhileDownThenPGMQMissingNamesItsInstallation(t *testing.T) {
	t.Parallel()
	dir, url := stoppedWithSchema(t, "DROP SCHEMA pgmq CASCADE")
	c, _, stderr := serveStdio(t, "--no-workers", "--database-url", url)
	pgtest.StartCluster(t, dir)

	const step = "pgbus migrate --install-pgmq PGMQ_SQL"
	var res *mcp.CallToolResult
	pgtest.Eventually(t, 2*time.Minute, "calls to say PGMQ's tables are missing", func() bool {
		res = callToolRaw(t, c, "pgbus_queue_stats", map[string]any{"queue": "orders"})
		return strings.Contains(toolText(res), "PGMQ's tables")
	})
	if text := toolText(res); !strings.Contains(text, step) || strings.Contains(text, "InstallPGMQ") {
		t.Errorf("pgbus_queue_stats while PGMQ's tables are missing: %q\nwant %q as a step, and no Go function named\nstderr: %s", text, step, stderr.String())
	}
	h := callToolRaw(t, c, "pgbus_health", nil)
	b, err := json.Marshal(h.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), step) || strings.Contains(string(b), "InstallPGMQ") {
		t.Errorf("pgbus_health while PGMQ's tables are missing: %s\nwant %q as a step, and no Go function named", b, step)
	}
}

// pgbus serve started while it could not connect (its role not made
// yet), which then connects while another process holds the migration
// lock, says its calls wait for it to ready the schema, not that the
// database does not answer: it answers.
func TestServeSaysItReadiesTheSchemaWhileAnotherMigrates(t *testing.T) {
	t.Parallel()
	_, cluster := pgtest.PrivateCluster(t)
	url := cluster.URL()
	s, err := store.Open(pgtest.Context(t), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(pgtest.Context(t)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	pgtest.Exec(t, url, oldSchema(t))
	// Another process migrates: it holds the lock until the test ends.
	conn, err := pgx.Connect(pgtest.Context(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(pgtest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(pgtest.Context(t), `SELECT pg_advisory_xact_lock($1)`, pgtest.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	lateURL := strings.Replace(url, "://"+cfg.User+"@", "://latecomer@", 1)
	if lateURL == url {
		t.Fatalf("no user in %s to replace", url)
	}
	c, _, stderr := serveStdio(t, "--no-workers", "--database-url", lateURL)
	pgtest.Eventually(t, time.Minute, "serve to be refused its connections", func() bool {
		return strings.Contains(stderr.String(), "refuses this process's connections")
	})
	pgtest.Exec(t, url, `CREATE ROLE latecomer LOGIN SUPERUSER`)
	pgtest.Eventually(t, 2*time.Minute, "serve to wait for the migration lock", func() bool {
		var waiting int
		if err := conn.QueryRow(pgtest.Context(t), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting > 0
	})
	res := callToolRaw(t, c, "pgbus_queue_stats", map[string]any{"queue": "orders"})
	if text := toolText(res); !strings.Contains(text, "the database answers") || !strings.Contains(text, "readying its pgbus schema (migrating or checking it") || strings.Contains(text, "does not answer yet") {
		t.Fatalf("pgbus_queue_stats while another process migrates: %q\nwant it to say the database answers and this process is migrating or checking the schema\nstderr: %s", text, stderr.String())
	}
}
