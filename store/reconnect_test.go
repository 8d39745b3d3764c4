//go:build linux || darwin

package store_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestSurvivesServerRestart restarts a private cluster (never the shared
// one) under an open store whose pool holds connections, and checks that
// the very next read and a write succeed on fresh connections.
func TestSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fast", "immediate"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // each mode on a cluster of its own
			ctx := pgtest.Context(t)
			dir, c, s := privateStore(t)

			switch mode {
			case "fast":
				// Stop is a fast shutdown: backends are told to terminate.
				if err := c.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			case "immediate":
				pid := postmasterPID(t, dir)
				if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
					t.Fatal(err)
				}
				// Stop waits until the server is gone; it sends nothing
				// more once the postmaster has exited.
				if err := c.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			}
			pgtest.StartCluster(t, dir)
			if n := s.Pool().Stat().IdleConns(); n < 2 {
				t.Fatalf("pool holds %d idle connections; want the old ones still there", n)
			}

			if _, err := s.QueueStats(ctx, "rc", store.QueueStatsOptions{Archive: true}); err != nil {
				t.Fatalf("first read after restart: %v", err)
			}
			if _, err := s.Send(ctx, "rc", store.NewMessage{Payload: json.RawMessage(`{"n":1}`)}); err != nil {
				t.Fatalf("first write after restart: %v", err)
			}
			if qs, err := s.ListQueues(ctx); err != nil || len(qs) == 0 {
				t.Fatalf("ListQueues after restart: %v, %v", qs, err)
			}
		})
	}
}

// TestWriteAfterRestart checks that a write that is the first statement
// after a restart succeeds: the dead connection it would have used never
// reached the server.
func TestWriteAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dir, c, s := privateStore(t)
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.StartCluster(t, dir)
	if _, err := s.Send(ctx, "rc", store.NewMessage{Payload: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatalf("first write after restart: %v", err)
	}
	if n := pgtest.Live(t, s, "rc"); n != 1 {
		t.Fatalf("queue holds %d messages, want 1", n)
	}
}

// fillPool makes the pool hold n connections, all used and idle, and reads
// through the store.
func fillPool(t *testing.T, s *store.Store, n int) {
	t.Helper()
	ctx := pgtest.Context(t)
	conns := make([]*pgxpool.Conn, n)
	for i := range conns {
		c, err := s.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		c.Release()
	}
	if _, err := s.QueueStats(ctx, "rc", store.QueueStatsOptions{Archive: true}); err != nil {
		t.Fatal(err)
	}
}

func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		t.Fatalf("postmaster.pid: %q", b)
	}
	return pid
}

// TestRetryOnDeadConnection uses a pool that never pings, so the store gets
// a dead connection. Reads must succeed when the server ended the backend
// (only its own, on the shared server) and reads and writes when the
// connection broke before the statement was sent.
func TestRetryOnDeadConnection(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	shared := testStore(t)
	queue := newQueue(t, shared)
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	t.Cleanup(s.Close)

	steps := []struct {
		name  string
		write bool
		run   func() error
	}{
		{"QueueStats", false, func() error { _, err := s.QueueStats(ctx, queue, store.QueueStatsOptions{Archive: true}); return err }},
		{"ListQueues", false, func() error { _, err := s.ListQueues(ctx); return err }},
		{"Send", true, func() error {
			_, err := s.Send(ctx, queue, store.NewMessage{Payload: json.RawMessage(`{}`)})
			return err
		}},
		{"PurgeQueue", true, func() error { _, err := s.PurgeQueue(ctx, queue); return err }},
	}
	for _, step := range steps {
		if !step.write {
			// The server may already have answered with its FATAL error:
			// the statement was sent, so only a read may be retried.
			killPoolBackend(t, shared, pool)
			if err := step.run(); err != nil {
				t.Errorf("%s after its backend was terminated: %v", step.name, err)
			}
		}
		breakPoolSocket(t, pool)
		if err := step.run(); err != nil {
			t.Errorf("%s on a broken connection: %v", step.name, err)
		}
	}
}

// killPoolBackend terminates the backend of pool's one connection and waits
// until it is gone.
func killPoolBackend(t *testing.T, other *store.Store, pool *pgxpool.Pool) {
	t.Helper()
	ctx := pgtest.Context(t)
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Conn().PgConn().PID()
	c.Release()
	if _, err := other.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "backend to go", func() bool {
		return pgtest.Int(t, other, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) == 0
	})
}

// breakPoolSocket closes the socket under pool's one connection, behind
// pgx's back: the next statement on it fails to be sent.
func breakPoolSocket(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	c, err := pool.Acquire(pgtest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Conn().PgConn().Conn().Close()
	c.Release()
}

// privateStore starts a cluster of its own in a temporary directory (never
// the shared one), opens a migrated store on it with a queue "rc", and fills
// the pool with idle connections.
func privateStore(t *testing.T) (string, *embedpg.Cluster, *store.Store) {
	t.Helper()
	ctx := pgtest.Context(t)
	dir, c, s := pgtest.PrivateStore(t)
	if err := s.CreateQueue(ctx, "rc"); err != nil {
		t.Fatal(err)
	}
	fillPool(t, s, 3)
	return dir, c, s
}
