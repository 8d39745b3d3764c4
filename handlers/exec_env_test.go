//go:build unix

package handlers_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/pgbus/pgbus/handlers"
)

// envOf runs a real command that prints its environment for one job and
// returns what it printed, by name.
func envOf(t *testing.T, ctx context.Context, options map[string]any) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "env")
	opts := map[string]any{"command": []any{"/bin/sh", "-c", `exec env > "$1"`, "print-env", out}}
	for k, v := range options {
		opts[k] = v
	}
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Options: opts})
	if err := fn(ctx, execJob(1, `{}`)); err != nil {
		t.Fatalf("the command failed: %v", err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(string(raw)) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "="); ok {
			env[k] = v
		}
	}
	return env
}

// The worker's database credentials are not handed to its commands, which
// may be scripts of a third party: DATABASE_URL and the libpq variables
// (which pgx reads too) are withheld unless the env option sets them, when
// its value is passed. Other variables, PG-named ones that libpq does not
// read included, pass as before.
func TestExecCommandGetsNoDatabaseCredentials(t *testing.T) {
	withheld := map[string]string{
		"DATABASE_URL":  "postgres://worker:WorkerSecret9@db.internal/app",
		"PGPASSWORD":    "WorkerSecret9",
		"PGPASSFILE":    "/etc/pgbus/pgpass",
		"PGHOST":        "db.internal",
		"PGUSER":        "worker",
		"PGDATABASE":    "app",
		"PGSERVICE":     "worker",
		"PGSERVICEFILE": "/etc/pgbus/pg_service.conf",
		"PGSSLKEY":      "/etc/pgbus/worker.key",
		"PGSSLCERT":     "/etc/pgbus/worker.crt",
		"PGSSLPASSWORD": "KeySecret7",
		"PGOPTIONS":     "-c role=worker",
	}
	passed := map[string]string{
		"KEEP_ME": "yes",
		"PGID":    "1000",        // not libpq's (container images use it)
		"PGDATA":  "/var/lib/pg", // the server's, not libpq's
	}
	for k, v := range withheld {
		t.Setenv(k, v)
	}
	for k, v := range passed {
		t.Setenv(k, v)
	}
	t.Setenv("PGBUS_TEST_KEEP", "x") // the worker's own: withheld, as before

	env := envOf(t, context.Background(), nil)
	for k := range withheld {
		if v, ok := env[k]; ok {
			t.Errorf("the command got the worker's %s=%s", k, v)
		}
	}
	if _, ok := env["PGBUS_TEST_KEEP"]; ok {
		t.Errorf("the command got the worker's PGBUS_TEST_KEEP")
	}
	for _, k := range []string{"KEEP_ME", "PGID", "PGDATA"} {
		if env[k] != passed[k] {
			t.Errorf("%s=%q in the command's environment; want the worker's %q", k, env[k], passed[k])
		}
	}
	if env["PGBUS_MSG_ID"] != "1" || env["PGBUS_QUEUE"] != "q" {
		t.Errorf("the job's variables are missing: %v", env)
	}

	// Set by the env option: passed as set there.
	env = envOf(t, context.Background(), map[string]any{"env": map[string]any{
		"DATABASE_URL": "postgres://jobs@db.internal/jobs", "PGPASSWORD": "JobSecret", "PGHOST": "jobs.internal",
	}})
	for k, want := range map[string]string{"DATABASE_URL": "postgres://jobs@db.internal/jobs", "PGPASSWORD": "JobSecret", "PGHOST": "jobs.internal"} {
		if env[k] != want {
			t.Errorf("%s=%q; want %q, as the env option sets it", k, env[k], want)
		}
	}
	for _, k := range []string{"PGUSER", "PGPASSFILE", "PGSSLKEY"} {
		if v, ok := env[k]; ok {
			t.Errorf("the command got the worker's %s=%s, which the env option does not set", k, v)
		}
	}
}

// The command gets the attempt's trace context as TRACEPARENT and
// TRACESTATE, the names OpenTelemetry's environment carriers read, as the
// http handler sends it in its headers; the worker's own, should it have
// been started with one, is not the job's and is not passed on.
func TestExecCommandGetsTheAttemptsTraceContext(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-11111111111111111111111111111111-2222222222222222-01")
	t.Setenv("TRACESTATE", "worker=launch")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=abc,other=xyz")
	if err != nil {
		t.Fatal(err)
	}
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	}))

	env := envOf(t, ctx, nil)
	if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; env[handlers.EnvTraceparent] != want {
		t.Errorf("TRACEPARENT=%q; want the attempt's %q", env[handlers.EnvTraceparent], want)
	}
	if want := "vendor=abc,other=xyz"; env[handlers.EnvTracestate] != want {
		t.Errorf("TRACESTATE=%q; want the attempt's %q", env[handlers.EnvTracestate], want)
	}

	// No trace context (tracing off): neither, and not the worker's.
	env = envOf(t, context.Background(), nil)
	for _, k := range []string{handlers.EnvTraceparent, handlers.EnvTracestate} {
		if v, ok := env[k]; ok {
			t.Errorf("without a trace context the command got %s=%s", k, v)
		}
	}
}
