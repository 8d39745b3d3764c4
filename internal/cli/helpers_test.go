package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbusIn runs the binary with stdin: the one binaryFor picks.
func pgbusIn(t *testing.T, env []string, stdin string, args ...string) run {
	t.Helper()
	return runBinary(t, binaryFor(args), env, stdin, args...)
}

// usageRun runs a command line that must stop at a usage error (exit 2)
// before it starts anything, with the quick binary whatever the command:
// a worker or server refused by its flags runs no goroutine. The caller
// checks the exit code.
func usageRun(t *testing.T, env []string, args ...string) run {
	t.Helper()
	return runBinary(t, quickBinary, env, "", args...)
}

// runBinary runs bin with args, env after baseEnv and stdin, and returns
// its output and exit code.
func runBinary(t *testing.T, bin string, env []string, stdin string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run pgbus %v: %v", args, err)
	}
	return r
}

// db is a fresh database for one test, and the environment that points
// pgbus at it. conns, when set, holds the connections of the test's own
// queries (query, count, snapshot): a new connection costs PostgreSQL
// a fresh backend, which warms its catalog caches again, for each of a
// test's many checks. A db made by hand (another role's, the embedded
// server's) connects anew for each query.
type db struct {
	url   string
	env   []string
	conns *pgxpool.Pool
}

func newDB(t *testing.T) db {
	t.Helper()
	url := pgtest.NewDatabase(t)
	return db{url: url, env: []string{"DATABASE_URL=" + url}, conns: queryPool(t, url)}
}

// queryPool is the pool of a test's own queries on url, closed before the
// database is dropped. It connects on first use and keeps no statement
// prepared between queries (a test may drop and create tables under the
// same names); the queries set no session state, so a connection used
// before answers them as a new one would.
func queryPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse the test database URL: %v", err)
	}
	cfg.MaxConns = 2
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open the test's connections: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// ok runs pgbus and fails the test unless it exits 0.
func (d db) ok(t *testing.T, args ...string) string {
	t.Helper()
	r := pgbus(t, d.env, args...)
	if r.code != 0 {
		t.Fatalf("pgbus %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// json runs pgbus with --json and decodes its stdout into v, strictly.
func (d db) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out := d.ok(t, append(args, "--json")...)
	decodeStrict(t, out, v)
}

func decodeStrict(t *testing.T, out string, v any) {
	t.Helper()
	// Decoding into a used value would keep fields the new JSON omits.
	reflect.ValueOf(v).Elem().SetZero()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, out, err)
	}
}

// keys returns the top-level keys of a JSON object.
func keys(t *testing.T, out string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not a JSON object: %q: %v", out, err)
	}
	return m
}

// fails runs pgbus and checks its exit code, that it printed one error
// line and nothing on stdout; it returns stderr. With --json the error is
// one JSON object, and the line returned the one it stands for. A usage
// error (exit 2) is run with the quick binary, as usageRun runs it.
func (d db) fails(t *testing.T, code int, args ...string) string {
	t.Helper()
	return d.failsIn(t, code, "", args...)
}

func (d db) failsIn(t *testing.T, code int, stdin string, args ...string) string {
	t.Helper()
	var r run
	if code == 2 {
		r = runBinary(t, quickBinary, d.env, stdin, args...)
	} else {
		r = pgbusIn(t, d.env, stdin, args...)
	}
	if r.code != code {
		t.Fatalf("pgbus %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	if slices.Contains(args, "--json") {
		e := decodeErrorJSON(t, r)
		if e.ExitCode != code {
			t.Fatalf("pgbus %s: exit_code %d, want %d\n%s", strings.Join(args, " "), e.ExitCode, code, r.stderr)
		}
		r.stderr = "pgbus: " + e.Error + "\n" // the line it stands for

	}
	if !strings.Contains(r.stderr, "pgbus: ") {
		t.Fatalf("pgbus %s: stderr %q has no error line", strings.Join(args, " "), r.stderr)
	}
	if code == 2 && r.stdout != "" {
		t.Fatalf("pgbus %s: usage error printed on stdout: %q", strings.Join(args, " "), r.stdout)
	}
	return r.stderr
}

// query runs one SQL query on the test database and scans one row.
func (d db) query(t *testing.T, sql string, dest ...any) {
	t.Helper()
	ctx := context.Background()
	var row pgx.Row
	if d.conns != nil {
		row = d.conns.QueryRow(ctx, sql)
	} else {
		conn, err := pgx.Connect(ctx, d.url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		row = conn.QueryRow(ctx, sql)
	}
	if err := row.Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func (d db) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	d.query(t, sql, &n)
	return n
}

// snapshot counts what a write could change, to check that a refused or
// rejected command wrote nothing.
func (d db) snapshot(t *testing.T) string {
	t.Helper()
	var s string
	d.query(t, `SELECT concat_ws(' ',
		(SELECT count(*) FROM pgmq.meta),
		(SELECT count(*) FROM pgbus.queues),
		(SELECT string_agg(queue_name || ':' || max_retries || ':' || paused, ',' ORDER BY queue_name) FROM pgbus.queues),
		(SELECT count(*) FROM pgbus.audit_log),
		(SELECT count(*) FROM pgbus.failures),
		(SELECT coalesce(sum((xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM pgmq.%I', 'q_' || queue_name), false, true, '')))[1]::text::int), 0) FROM pgmq.meta),
		(SELECT coalesce(sum((xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM pgmq.%I', 'a_' || queue_name), false, true, '')))[1]::text::int), 0) FROM pgmq.meta))`, &s)
	return s
}

// stats returns the stats of one queue, from pgbus queues QUEUE --json.
func (d db) stats(t *testing.T, queue string) ops.QueueStats {
	t.Helper()
	var res ops.QueueStatsResult
	d.json(t, &res, "queues", queue)
	if len(res.Queues) != 1 || res.Queues[0].Queue != queue {
		t.Fatalf("queues %s --json: %+v", queue, res.Queues)
	}
	return res.Queues[0]
}

// audit returns the audit log, newest first, from pgbus audit --json with
// the arguments given, and --limit 100 unless they give one.
func (d db) audit(t *testing.T, args ...string) []ops.AuditEntry {
	t.Helper()
	var page ops.AuditPage
	cmd := []string{"audit"}
	if !slices.Contains(args, "--limit") {
		cmd = append(cmd, "--limit", "100")
	}
	d.json(t, &page, append(cmd, args...)...)
	return page.Items
}

// startListening starts cmd with its JSON log on stderr and returns the
// field key of the first log record whose msg is msg (where it listens),
// and the log so far and to come. It fails the test when cmd does not
// start or logs no such record within a minute.
func startListening(t *testing.T, cmd *exec.Cmd, msg, key string) (string, *syncBuffer) {
	t.Helper()
	// A writer rather than StderrPipe: cmd.Wait returns only once all the
	// process wrote is copied into logs, where with a pipe it may close the
	// pipe before the last lines are read, and a test that reads the logs
	// after the process ended missed them.
	lines := &lineWatch{logs: &syncBuffer{}, msg: msg, key: key, found: make(chan string, 1)}
	cmd.Stderr = lines
	// A child that kept the process's stderr open would hold cmd.Wait.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-lines.found:
		return v, lines.logs
	case <-time.After(time.Minute):
		t.Fatalf("no %q line with %s on stderr:\n%s", msg, key, lines.logs.String())
		return "", nil
	}
}

// workUntil runs pgbus work with args and env (its log as JSON) until
// done holds, then stops it with SIGTERM and returns what it wrote and its
// exit code: a worker given a fixed --for may end, on a loaded machine,
// before it read anything.
func workUntil(t *testing.T, env []string, what string, done func(logs string) bool, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binaryFor(append([]string{"work"}, args...)), append([]string{"work", "--log-format", "json"}, args...)...)
	cmd.Env = append(baseEnv(), env...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	_, logs := startListening(t, cmd, "pgbus work: starting", "worker")
	defer func() { _ = cmd.Process.Kill() }()
	pgtest.Eventually(t, time.Minute, what, func() bool { return done(logs.String()) })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	r := run{stdout: stdout.String(), stderr: logs.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("pgbus work %v: %v", args, err)
	}
	return r
}

// lineWatch copies a process's JSON log lines into logs, and sends on
// found the value of key in the first line whose message is msg.
type lineWatch struct {
	logs     *syncBuffer
	msg, key string
	found    chan string
	partial  []byte // a line not ended yet
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.logs.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		var rec map[string]any
		if json.Unmarshal(w.partial[:i], &rec) == nil && rec["msg"] == w.msg {
			if v, ok := rec[w.key].(string); ok {
				select {
				case w.found <- v:
				default:
				}
			}
		}
		w.partial = w.partial[i+1:]
	}
}

// counted is a count of a health verdict, or -1 where the check could not
// read it (absent): a test comparing it fails rather than panics.
func counted[T int | int64](p *T) T {
	if p == nil {
		return -1
	}
	return *p
}
