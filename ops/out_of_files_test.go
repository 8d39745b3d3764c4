package ops_test

import (
	"context"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A call whose process has no file descriptor left to open a connection
// with (a low ulimit -n, an HTTP server's clients holding them all) says
// so and what to raise, where it said that the database does not answer
// and to check the server: the database was never asked.
func TestOutOfFilesIsSaidAsTheProcesssLimit(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pgtest.Store(t) // migrates the test database
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	store.ConfigurePool(cfg)
	var noFiles atomic.Bool
	var dialer net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if noFiles.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", syscall.EMFILE)}
		}
		return dialer.DialContext(ctx, network, addr)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	t.Cleanup(st.Close)
	svc := newService(t, st, ops.Options{})
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{}); err != nil {
		t.Fatalf("queues before the process ran out of files: %v", err)
	}

	noFiles.Store(true)
	pool.Reset() // the pool's connections gone: the next call opens one
	_, err = svc.QueueStats(ctx, ops.QueueStatsRequest{})
	if err == nil {
		t.Fatal("queues with no file descriptor left to connect with: no error")
	}
	if msg := err.Error(); !strings.Contains(msg, "file descriptor") || !strings.Contains(msg, "ulimit -n") || strings.Contains(msg, "does not answer") {
		t.Errorf("queues with no file descriptor left to connect with: %q; want the process's limit of open files, not a database that does not answer", msg)
	}
	// The health check's advice, which a probe gives without the error,
	// says so too.
	if advice := ops.DatabaseAdvice(err); !strings.Contains(advice, "file descriptor") || !ops.OutOfFiles(err) {
		t.Errorf("advice for a call with no file descriptor left: %q (OutOfFiles %v); want the process's limit of open files", advice, ops.OutOfFiles(err))
	}
}
