package metrics_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A process with no file descriptor left to open a connection with (a
// low ulimit -n) is told by /readyz as what it is, with the limit to
// raise, not as a database that did not answer the health check.
func TestReadyzSaysTheProcessIsOutOfFiles(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
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
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var log pgtest.SyncBuffer
	base := serve(t, metrics.Probes(svc, metrics.ProbeOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))}))
	if code, _, body := getReadyz(t, base); code != http.StatusOK {
		t.Fatalf("/readyz with the database up: %d %s", code, body)
	}
	noFiles.Store(true)
	pool.Reset()
	var r metrics.Readiness
	var body string
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503", func() bool {
		var code int
		code, r, body = getReadyz(t, base)
		return code == http.StatusServiceUnavailable && len(r.Reasons) > 0
	})
	msg := r.Reasons[0].Message
	if !strings.Contains(msg, "file descriptor") || !strings.Contains(msg, "ulimit -n") || strings.Contains(msg, "did not answer") || strings.Contains(msg, "PostgreSQL runs") {
		t.Errorf("/readyz: %s\nwant the process's limit of open files, not a database that did not answer", body)
	}
}
