package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runClosedStdout runs the binary with args on d's database, its stdout a
// pipe whose reader is gone, as with | head after a line, and returns its
// exit code and stderr.
func runClosedStdout(t *testing.T, d db, stdin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader went away
	defer w.Close()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(baseEnv(), d.env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("pgbus %s with stdout closed: %v, want an exit code\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return exit.ExitCode(), stderr.String()
}

// A write whose output's reader went away (pgbus send --ndjson | head -1)
// exits 1, as its output was cut, and says on stderr that the write was
// done, so that a script does not take the exit for the write's failure
// and send again; a read whose reader went away says nothing.
func TestClosedStdoutAfterAWriteSaysItWasDone(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	code, stderr := runClosedStdout(t, d, strings.Join(ndjsonLines(3000), "\n"), "send", "orders", "--ndjson", "-")
	if code != 1 || !strings.Contains(stderr, "pgbus: the reader of the output went away before it was all written; pgbus send itself was done: see pgbus audit") {
		t.Errorf("send with stdout closed: exit %d, stderr %q; want 1 and that the send was done", code, stderr)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 3000 {
		t.Errorf("%d messages sent, want the 3000 lines", n)
	}
	code, stderr = runClosedStdout(t, d, "", "queues")
	if code != 1 || strings.Contains(stderr, "pgbus: ") {
		t.Errorf("queues with stdout closed: exit %d, stderr %q; want 1 and nothing said", code, stderr)
	}
}
