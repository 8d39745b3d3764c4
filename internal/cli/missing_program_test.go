package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A configuration file shared with a machine that lacks an exec handler's
// program (an operator's laptop) still serves every command that runs no
// worker there; a worker that would run the program refuses to start,
// naming the key and what to do, while one that works other queues starts.
// A malformed block stops every command, program or not.
func TestMissingProgramStopsOnlyItsWorker(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	cfg := writeFile(t, "cfg.yaml", `
worker:
  poll_interval: 50ms
  drain_timeout: 5s
queues:
  orders:
    handler: {type: demo}
  exc:
    handler:
      type: exec
      command: [/nonexistent/pgbus-test/missing.sh]
`)
	env := append([]string{"PGBUS_CONFIG=" + cfg}, d.env...)
	for _, args := range [][]string{{"health"}, {"dlq", "summary"}, {"queues"}, {"workers"}} {
		if r := pgbus(t, env, args...); r.code != 0 || strings.Contains(r.stderr, "missing.sh") {
			t.Errorf("pgbus %s with the program missing: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}

	msg := d.fails(t, 2, "--config", cfg, "work", "--until-idle")
	if !strings.Contains(msg, "queues.exc.handler") || !strings.Contains(msg, `program "/nonexistent/pgbus-test/missing.sh" does not exist: install it, or fix the path in command`) {
		t.Fatalf("work on the queue whose program is missing: %q", msg)
	}
	d.ok(t, "--config", cfg, "work", "--queue", "orders", "--until-idle")
	// serve runs workers on the file's queues, read-only or not.
	if msg := d.fails(t, 2, "--config", cfg, "serve", "--read-only"); !strings.Contains(msg, "queues.exc.handler") ||
		!strings.Contains(msg, "does not exist") || !strings.Contains(msg, "pgbus serve runs workers on the configuration file's queues") {
		t.Fatalf("serve on the file's queues: %q", msg)
	}
	if msg := d.fails(t, 2, "--config", cfg, "serve", "--no-workers", "--queue", "orders"); !strings.Contains(msg, "--no-workers runs no worker") {
		t.Fatalf("serve --no-workers --queue: %q", msg)
	}
	// --no-workers serves agents with the same file, the program missing.
	c, _, _ := serveStdio(t, "--read-only", "--no-workers", "--config", cfg, "--database-url", d.url)
	var h ops.Health
	if err := json.Unmarshal([]byte(toolText(callTool(t, c, "pgbus_health", map[string]any{}))), &h); err != nil || *h.Workers != 0 || h.Status == "" {
		t.Fatalf("pgbus_health of serve --no-workers: %+v, %v; want no worker running", h, err)
	}

	bad := writeFile(t, "bad.yaml", `
queues:
  exc:
    handler:
      type: exec
      command: [/nonexistent/pgbus-test/missing.sh]
      retry_exit_codes: [0]
`)
	if msg := d.fails(t, 2, "--config", bad, "health"); !strings.Contains(msg, "queues.exc.handler") || !strings.Contains(msg, "exit code 0 is success") {
		t.Fatalf("health with a malformed block: %q", msg)
	}
}
