package cli_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The sessions of pgbus work carry "pgbus work" as their application_name,
// its listener's included, so that pg_stat_activity tells them from those
// of other pgbus commands and programs; a URL's own application_name is
// kept.
func TestWorkSessionsNameTheCommand(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "named")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(url string) {
		cmd := exec.CommandContext(ctx, binary, "work", "--queue", "named", "--handler", "demo",
			"--metrics-addr", "127.0.0.1:0", "--database-url", url, "--log-format", "json")
		cmd.Env = baseEnv()
		startListening(t, cmd, "pgbus: metrics and probes listening", "metrics")
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	start(d.url)
	start(pgtest.WithParam(t, d.url, "application_name", "billing-worker"))
	// Wait for both listeners, then read the names of every session of
	// the two processes: those of the database but the test's own, which
	// carry none, and the one queue create may still be ending.
	var listeners []string
	for len(listeners) < 2 {
		listeners = appNames(t, d, `SELECT application_name FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %' ORDER BY 1`)
		if ctx.Err() != nil {
			t.Fatalf("listening sessions %q; want two", listeners)
		}
		if len(listeners) < 2 {
			time.Sleep(50 * time.Millisecond) // between looks, not a bound
		}
	}
	if want := []string{"billing-worker", "pgbus work"}; !slices.Equal(listeners, want) {
		t.Errorf("the listeners' application_name: %q; want %q", listeners, want)
	}
	names := appNames(t, d, `SELECT DISTINCT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend'
		  AND application_name NOT IN ('', 'pgbus queue create') ORDER BY 1`)
	if want := []string{"billing-worker", "pgbus work"}; !slices.Equal(names, want) {
		t.Errorf("the application_name of the sessions of the database: %q; want %q", names, want)
	}
}

// appNames reads the application names query returns, one a row.
func appNames(t *testing.T, d db, query string) []string {
	t.Helper()
	rows, err := d.conns.Query(pgtest.Context(t), query)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}
