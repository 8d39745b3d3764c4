package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus serve whose embedded workers stop on an error after the server
// started (here a role that may not read, or may not delete, the record of
// which queues use which circuit breaker) goes on answering agents, but no
// longer says all is well: /readyz answers 503 and pgbus_health STALLED,
// both with the reason workers_stopped, which names the queue, the error
// and the grant that mends it, as the dashboard's overview does when it
// can read the rest of the verdict; the log says so once, at ERROR.
// /readyz answered 200 and pgbus_health said nothing of it while no job
// ran. pgbus work, in the same case, exits 1 naming the table and the
// privileges workers need, among which its message left out the writes.
func TestServeWorkersStoppedNotReady(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, revoke string }{{"select", "SELECT"}, {"delete", "DELETE"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			workersStopped(t, c.revoke)
		})
	}
}

// workersStopped runs TestServeWorkersStoppedNotReady with the privilege
// revoke taken from the role on pgbus.circuit_breaker_users.
func workersStopped(t *testing.T, revoke string) {
	owner := newDB(t)
	owner.ok(t, "queue", "create", "jobs")
	role, roleURL := pgtest.NewRole(t, owner.url)
	for _, grant := range operatorGrants(role) {
		pgtest.Exec(t, owner.url, grant)
	}
	pgtest.Exec(t, owner.url, "REVOKE "+revoke+" ON pgbus.circuit_breaker_users FROM "+role)

	work := pgbus(t, []string{"DATABASE_URL=" + roleURL}, "work", "--queue", "jobs", "--handler", "demo", "--for", "1m")
	if work.code != 1 || !strings.Contains(work.stderr, "permission denied for table circuit_breaker_users") || !strings.Contains(work.stderr, "lacks a privilege") {
		t.Errorf("pgbus work as a role that may not use pgbus.circuit_breaker_users: exit %d\n%s\nwant exit 1 naming the table and the privileges", work.code, work.stderr)
	}
	if revoke == "DELETE" && !strings.Contains(work.stderr, "work and serve's workers also need INSERT, UPDATE and DELETE") {
		t.Errorf("pgbus work refused a delete does not say that workers need it:\n%s", work.stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--transport", "http", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--database-url", roleURL, "--queue", "jobs", "--handler", "demo")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	endpoint, logs := startListening(t, cmd, "pgbus MCP server listening", "url")
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	const stopped = `"level":"ERROR","msg":"pgbus serve: embedded workers stopped`
	pgtest.Eventually(t, time.Minute, "the log to say the embedded workers stopped", func() bool {
		return strings.Contains(logs.String(), stopped)
	})

	get := getter(t, strings.TrimSuffix(endpoint, "/mcp"))
	code, body, _ := get("/readyz", "")
	var ready struct {
		Ready   bool `json:"ready"`
		Reasons []struct {
			Status, Code, Message string
		} `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(body), &ready); err != nil {
		t.Fatalf("/readyz: %d %s: %v", code, body, err)
	}
	if code != http.StatusServiceUnavailable || ready.Ready || len(ready.Reasons) == 0 || ready.Reasons[0].Code != "workers_stopped" ||
		!strings.Contains(ready.Reasons[0].Message, `"jobs"`) || !strings.Contains(ready.Reasons[0].Message, "circuit_breaker_users") || !strings.Contains(ready.Reasons[0].Message, "GRANT") {
		t.Fatalf("/readyz once the embedded workers stopped: %d %s\nwant 503, its first reason workers_stopped naming the queue, the table and the GRANT\nlog:\n%s", code, body, logs.String())
	}

	c := connectHTTP(t, ctx, endpoint, "", logs)
	status, reasons := healthOf(t, c)
	if status != "STALLED" || len(reasons) == 0 || reasons[0].Code != "workers_stopped" || reasons[0].Message != ready.Reasons[0].Message {
		t.Errorf("pgbus_health once the embedded workers stopped: %s %+v\nwant STALLED, its first reason workers_stopped as /readyz gives it", status, reasons)
	}
	if _, page, _ := get("/", ""); revoke != "SELECT" && !strings.Contains(page, "stopped on an error and run no job") {
		t.Errorf("the dashboard's overview once the embedded workers stopped does not say so:\n%s", page)
	}
	if n := strings.Count(logs.String(), stopped); n != 1 {
		t.Errorf("the stop of the embedded workers is logged %d times, want once:\n%s", n, logs.String())
	}
}
