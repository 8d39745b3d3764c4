package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// runStdout runs the binary with args on d's database with stdout, and
// returns its exit code and stderr.
func runStdout(t *testing.T, d db, stdin string, stdout *os.File, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(baseEnv(), d.env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return 0, stderr.String()
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("pgbus %s: %v, want an exit code\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return exit.ExitCode(), stderr.String()
}

// runClosedStdout runs the binary with args on d's database, its stdout a
// pipe whose reader is gone, as with | head after a line, and returns its
// exit code and stderr.
func runClosedStdout(t *testing.T, d db, stdin string, args ...string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader went away
	defer w.Close()
	return runStdout(t, d, stdin, w, args...)
}

// runFullStdout runs the binary with args on d's database, its stdout a
// full disk (/dev/full), and returns its exit code and stderr.
func runFullStdout(t *testing.T, d db, args ...string) (int, string) {
	t.Helper()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open /dev/full, a disk that is always full: %v", err)
	}
	defer full.Close()
	return runStdout(t, d, "", full, args...)
}

// errorLine decodes stderr's last line, the error of a command run with
// --json.
func errorLine(t *testing.T, what, stderr string) (e struct {
	Error    string `json:"error"`
	Kind     string `json:"kind"`
	ExitCode int    `json:"exit_code"`
	Next     []struct {
		Command string `json:"command"`
	} `json:"next"`
}) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		t.Fatalf("%s: stderr's last line is not the JSON error: %v\n%s", what, err, stderr)
	}
	return e
}

// A write whose output's reader went away (pgbus send --ndjson | head -1)
// exits 1, as its output was cut, and says on stderr that it ran, with
// the audit log to see what it did, so that a script does not take the
// exit for the write's failure and send again; a read whose reader went
// away says nothing.
func TestClosedStdoutAfterAWriteSaysItWasDone(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	code, stderr := runClosedStdout(t, d, strings.Join(ndjsonLines(3000), "\n"), "send", "orders", "--ndjson", "-")
	if code != 1 || !strings.Contains(stderr, "pgbus send ran all the same, but its output is not all written: see pgbus audit --tool send") {
		t.Errorf("send with stdout closed: exit %d, stderr %q; want 1 and that the send ran, and where to see what it did", code, stderr)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 3000 {
		t.Errorf("%d messages sent, want the 3000 lines", n)
	}
	code, stderr = runClosedStdout(t, d, "", "queues")
	if code != 1 || strings.Contains(stderr, "pgbus: ") {
		t.Errorf("queues with stdout closed: exit %d, stderr %q; want 1 and nothing said", code, stderr)
	}
	// The outcome is not lost with the output: an id in no DLQ exits 3,
	// and --json errors stay one JSON line.
	code, stderr = runClosedStdout(t, d, "", "dlq", "retry", "999999", "--queue", "orders", "--json")
	if e := errorLine(t, "dlq retry of a missing id with stdout closed", stderr); code != 3 || e.Kind != "not_found" || e.ExitCode != 3 {
		t.Errorf("dlq retry of a missing id with stdout closed: exit %d, error %+v; want 3, not_found", code, e)
	}
}

// A command whose stdout is a full disk is not said to have found the
// database unavailable, with a health check to run and the command to run
// again after: the write it did is done, and the audit log says what it
// was; the outcome of a read is a plain failure.
func TestFullStdoutIsNotADatabaseOutage(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	pgtest.DeadLetterN(t, s, "orders", 3, pgtest.DeadSpec{})
	code, stderr := runFullStdout(t, d, "dlq", "retry-all", "--queue", "orders", "--all", "--yes", "--json")
	e := errorLine(t, "retry-all to a full disk", stderr)
	if code != 1 || e.Kind != "failed" || len(e.Next) == 0 || e.Next[0].Command != "pgbus audit --tool dlq_retry" ||
		!strings.Contains(e.Error, "no space left on device; pgbus dlq retry-all ran all the same") {
		t.Errorf("retry-all to a full disk: exit %d, error %+v; want 1, kind failed, that it ran, and pgbus audit --tool dlq_retry next", code, e)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 3 {
		t.Errorf("%d messages retried, want the 3 dead ones", n)
	}
	code, stderr = runFullStdout(t, d, "queues", "--json")
	if e := errorLine(t, "queues to a full disk", stderr); code != 1 || e.Kind != "failed" || len(e.Next) != 0 || strings.Contains(stderr, "health") {
		t.Errorf("queues to a full disk: exit %d, error %+v; want 1, kind failed, no next step", code, e)
	}
}

// A write command's help runs nothing: cut short (| head, a full disk), it
// is not said to have run, with the audit log to see what it did.
func TestCutHelpOfAWriteSaysNothingRan(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	code, stderr := runClosedStdout(t, d, "", "dlq", "retry", "--help")
	if code != 1 || strings.Contains(stderr, "ran all the same") || strings.Contains(stderr, "audit") {
		t.Errorf("dlq retry --help with stdout closed: exit %d, stderr %q; want 1 and nothing said of a retry", code, stderr)
	}
	code, stderr = runFullStdout(t, d, "dlq", "discard", "--help")
	if code != 1 || strings.Contains(stderr, "ran all the same") || strings.Contains(stderr, "audit") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("dlq discard --help to a full disk: exit %d, stderr %q; want 1, the disk full, and nothing said of a discard", code, stderr)
	}
}
