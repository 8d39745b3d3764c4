//go:build linux || darwin

package dbopen_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A long-running process started while its database has as many
// connections as max_connections allows waits for it, as it waits for one
// that does not answer, saying so in its own words and what to do; it
// connects once other clients let theirs go.
func TestConnectWaitsForACrowdedServer(t *testing.T) {
	ctx := pgtest.Context(t)
	dir, err := os.MkdirTemp("", "pgbus-dbopen-crowded-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cluster, err := embedpg.Start(ctx, embedpg.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.LimitConnections(t, cluster.URL(), 20)
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if cluster, err = embedpg.Start(ctx, embedpg.Options{DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	release := pgtest.Crowd(t, cluster.URL())

	var logs pgtest.SyncBuffer
	type result struct {
		db  *dbopen.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		db, err := dbopen.Connect(ctx, dbopen.Options{URL: cluster.URL(), WaitFor: 5 * time.Minute,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		done <- result{db, err}
	}()
	const crowdedLine = "PostgreSQL has as many connections as it allows"
	pgtest.Eventually(t, time.Minute, "Connect to say it waits", func() bool { return strings.Contains(logs.String(), crowdedLine) })
	release()
	r := <-done
	if r.err != nil {
		t.Fatalf("Connect once the server had room: %v\nlog:\n%s", r.err, logs.String())
	}
	defer r.db.Close()
	var one int
	if err := r.db.Pool().QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query through the waited-for connection: %d, %v", one, err)
	}
	out := logs.String()
	for _, want := range []string{"max_connections", "pool_max_conns", "PgBouncer"} {
		if !strings.Contains(out, want) {
			t.Errorf("the wait does not name %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, waitLine) {
		t.Errorf("a crowded server was said to be unreachable:\n%s", out)
	}
}
