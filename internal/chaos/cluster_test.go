package chaos_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbus/pgbus/embedpg"
)

// cluster is a PostgreSQL cluster of the soak's own, never the shared test
// server: the soak restarts it.
type cluster struct {
	dir string
	c   *embedpg.Cluster
}

// startCluster starts a private cluster in a new temporary directory, and
// stops and removes it when the test ends.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	// Not t.TempDir: the server user must be able to reach the directory
	// when the test runs as root, and embedpg hands it this one.
	dir, err := os.MkdirTemp("", "pgbus-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c, err := embedpg.Start(context.Background(), embedpg.Options{DataDir: dir, StartTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("start the soak's PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return &cluster{dir: dir, c: c}
}

// URL is the cluster's connection string.
func (c *cluster) URL() string { return c.c.URL() }

// restart runs pg_ctl restart with the shutdown mode given (fast: clients
// are disconnected and a checkpoint written; immediate: the server quits at
// once and recovers from the WAL on start) and returns once the server
// accepts connections again. pg_ctl starts the server with the options
// recorded in postmaster.opts, those embedpg started it with.
func (c *cluster) restart(ctx context.Context, mode string) error {
	bin, err := embedpg.FindBinDir()
	if err != nil {
		return err
	}
	pgdata := filepath.Join(c.dir, "pgdata")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "pg_ctl"), "restart", "-D", pgdata,
		"-m", mode, "-w", "-t", "120", "-l", filepath.Join(c.dir, "postgres.log"))
	if cmd.SysProcAttr, err = asOwnerOf(pgdata); err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl restart -m %s: %w\n%s", mode, err, out)
	}
	return nil
}
