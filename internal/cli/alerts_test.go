package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/exectest"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus work with an alerts block posts, to a real HTTP receiver and with
// the token from the environment, one alert for a new dead-letter group
// and one for the verdict turning DEGRADED as the dead letters are counted.
func TestWorkPostsAlerts(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	var mu sync.Mutex
	var posts []map[string]any
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v map[string]any
		_ = json.Unmarshal(body, &v)
		mu.Lock()
		defer mu.Unlock()
		posts = append(posts, v)
		auth = append(auth, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	// events returns the events posted so far, by type.
	events := func() map[string][]map[string]any {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]map[string]any{}
		for _, p := range posts {
			for _, e := range p["events"].([]any) {
				e := e.(map[string]any)
				out[e["type"].(string)] = append(out[e["type"].(string)], e)
			}
		}
		return out
	}

	script := filepath.Join(t.TempDir(), "charge.sh")
	exectest.WriteFile(t, script, "#!/bin/sh\necho 'card declined' >&2\nexit 1\n", 0o755)
	cfg := writeFile(t, "pgbus.yaml", `
queues:
  charges:
    handler:
      type: exec
      command: [`+script+`]
alerts:
  url: `+srv.URL+`/hook
  headers:
    Authorization: Bearer ${PGBUS_TEST_ALERT_TOKEN}
  check_interval: 1s
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "work", "--config", cfg, "--log-format", "json")
	cmd.Env = append(baseEnv(), append(d.env, "PGBUS_TEST_ALERT_TOKEN=tk-alert-1")...)
	var logs pgtest.SyncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	// The baseline is what the first check sees: the messages come once
	// it is recorded, not when the log says a check will take it.
	pgtest.Eventually(t, time.Minute, "the alerts baseline", func() bool {
		return strings.Contains(logs.String(), "this process sends the alerts") && d.count(t, `SELECT count(*) FROM pgbus.alert_checks`) > 0
	})
	for range 3 {
		d.ok(t, "send", "charges", `{"card": 1}`, "--kind", "charge")
	}
	pgtest.Eventually(t, time.Minute, "the alerts of the new group and of the verdict", func() bool {
		e := events()
		return len(e["dlq_group_new"]) > 0 && len(e["health_changed"]) > 0
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	e := events()
	if len(e["dlq_group_new"]) != 1 {
		t.Fatalf("the new group reported %d times, want once: %v", len(e["dlq_group_new"]), e)
	}
	g := e["dlq_group_new"][0]["group"].(map[string]any)
	if g["queue"] != "charges" || g["kind"] != "charge" || g["error_class"] != "exec.exit_1" || !strings.Contains(g["error"].(string), "card declined") {
		t.Errorf("the group: %v", g)
	}
	if h := e["health_changed"][0]; h["status"] != "DEGRADED" || !strings.Contains(h["reasons"].([]any)[0].(map[string]any)["code"].(string), "dead_letters_growing") {
		t.Errorf("the verdict's change: %v", h)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range auth {
		if a != "Bearer tk-alert-1" {
			t.Errorf("Authorization %q; want the token from the environment", a)
		}
	}
	if strings.Contains(logs.String(), "tk-alert-1") {
		t.Errorf("the log shows the token:\n%s", logs.String())
	}
}

// A ${NAME} of the alerts block whose variable is not set stops only the
// commands that would send alerts, before they start, in words that read
// whole; commands that read the same file work.
func TestAlertsVariableUnset(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	cfg := writeFile(t, "pgbus.yaml", `
queues:
  paged:
    handler: {type: demo}
alerts:
  url: https://hooks.example.com/pgbus
  headers:
    Authorization: Bearer ${PGBUS_TEST_PAGER_TOKEN_NEVER_SET}
`)
	for _, args := range [][]string{{"queues"}, {"dlq", "summary"}, {"health"}} {
		d.ok(t, append([]string{"--config", cfg}, args...)...)
	}
	msg := d.fails(t, 2, "--config", cfg, "work", "--for", "1s")
	if !strings.Contains(msg, "header Authorization uses ${PGBUS_TEST_PAGER_TOKEN_NEVER_SET}, but the environment variable PGBUS_TEST_PAGER_TOKEN_NEVER_SET is not set") {
		t.Fatalf("work with the alerts variable unset: %q", msg)
	}
}
