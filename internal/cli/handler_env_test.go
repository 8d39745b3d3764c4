package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/exectest"
)

// An http handler's header value ${NAME} is the worker's environment
// variable NAME: the downstream gets the variable's value, and where it
// says it back (a 500 echoing the header) the stored failure holds
// [REDACTED], not the value. The file keeps ${NAME}, which is what
// pgbus shows of it.
func TestHTTPHandlerHeaderFromEnvironment(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	const key = "kv-7f3a9c2e5b"
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Key"))
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("rejected key " + r.Header.Get("X-Key")))
	}))
	defer srv.Close()
	cfg := writeFile(t, "pgbus.yaml", `
worker:
  poll_interval: 50ms
queues:
  hooks:
    handler:
      type: http
      url: `+srv.URL+`/hook
      headers:
        X-Key: ${PGBUS_TEST_KEY}
      on_status: {500: dead_letter}
`)
	env := append([]string{"PGBUS_TEST_KEY=" + key}, d.env...)
	d.ok(t, "migrate")
	d.ok(t, "queue", "create", "hooks")
	d.ok(t, "--config", cfg, "send", "hooks", `{"n": 1}`)
	if r := pgbus(t, env, "--config", cfg, "work", "--until-idle"); r.code != 0 {
		t.Fatalf("work: exit %d\n%s", r.code, r.stderr)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != key {
		t.Fatalf("the downstream got X-Key %q; want the variable's value %q once", got, key)
	}
	mu.Unlock()
	var row string
	d.query(t, `SELECT q::text FROM pgmq.q_hooks_dlq q`, &row)
	if strings.Contains(row, key) || !strings.Contains(row, "rejected key [REDACTED]") {
		t.Fatalf("the dead letter does not hide the key the downstream echoed: %s", row)
	}
	if out := d.ok(t, "--config", cfg, "dlq", "list", "--queue", "hooks"); strings.Contains(out, key) {
		t.Fatalf("dlq list shows the key:\n%s", out)
	}
}

// A ${NAME} of a handler whose variable is not set stops the commands that
// run the queue's worker, naming the variable, the key and the queue, but
// not those that only read the file, which need not have the workers'
// secrets.
func TestHandlerUnsetVariableStopsOnlyWorkers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	cfg := writeFile(t, "pgbus.yaml", `
queues:
  hooks:
    handler:
      type: http
      url: https://hooks.example.com/in
      headers:
        Authorization: Bearer ${PGBUS_TEST_NEVER_SET_TOKEN}
`)
	msg := d.fails(t, 2, "--config", cfg, "work", "--until-idle")
	for _, want := range []string{"queues.hooks.handler", "headers", "header Authorization uses ${PGBUS_TEST_NEVER_SET_TOKEN}",
		"the environment variable PGBUS_TEST_NEVER_SET_TOKEN is not set; export PGBUS_TEST_NEVER_SET_TOKEN"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("work with the variable unset: %q lacks %q", msg, want)
		}
	}
	for _, args := range [][]string{{"dlq", "summary"}, {"queues"}} {
		if r := pgbus(t, d.env, append([]string{"--config", cfg}, args...)...); r.code != 0 || strings.Contains(r.stderr, "PGBUS_TEST_NEVER_SET_TOKEN") {
			t.Errorf("pgbus %s with the variable unset: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// An exec handler's env value ${NAME} reaches the command as the worker's
// variable NAME.
func TestExecHandlerEnvFromEnvironment(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "token.txt")
	script := filepath.Join(dir, "run.sh")
	exectest.WriteFile(t, script, "#!/bin/sh\nprintf %s \"$TOKEN\" > "+out+"\n", 0o755)
	cfg := writeFile(t, "pgbus.yaml", `
worker:
  poll_interval: 50ms
queues:
  jobs:
    handler:
      type: exec
      command: [`+script+`]
      env: {TOKEN: "${PGBUS_TEST_TOKEN}"}
`)
	d.ok(t, "migrate")
	d.ok(t, "queue", "create", "jobs")
	d.ok(t, "--config", cfg, "send", "jobs", `{}`)
	env := append([]string{"PGBUS_TEST_TOKEN=tok-51c0e9"}, d.env...)
	if r := pgbus(t, env, "--config", cfg, "work", "--until-idle"); r.code != 0 {
		t.Fatalf("work: exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != "tok-51c0e9" {
		t.Fatalf("the command got TOKEN %q (%v); want the variable's value", b, err)
	}
}
