//go:build linux

package dbopen_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// Close logs why the embedded server could not be stopped, which leaves it
// running: it said nothing.
func TestCloseLogsAFailedStop(t *testing.T) {
	ctx := pgtest.Context(t)
	dir, err := os.MkdirTemp("", "pgbus-dbopen-") // reachable by the server's user under root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var logs pgtest.SyncBuffer
	db, err := dbopen.Connect(ctx, dbopen.Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// A lock file Stop cannot open: a link, which it does not follow.
	lock := filepath.Join(dir, "pgbus.lock")
	if err := os.Rename(lock, lock+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(lock+".aside", lock); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := logs.String(); !strings.Contains(got, "stopping the embedded PostgreSQL failed") || !strings.Contains(got, "symbolic link") {
		t.Errorf("logs after a failed stop: %s; want the failure and why", got)
	}
	// Stop the server left running: a start adopts it, its stop is the last.
	if err := os.Rename(lock+".aside", lock); err != nil {
		t.Fatal(err)
	}
	c, err := embedpg.Start(context.Background(), embedpg.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
