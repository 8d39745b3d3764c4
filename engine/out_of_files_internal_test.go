package engine

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A worker that cannot open a connection for want of a file descriptor
// (a low ulimit -n) is told so once, with what to raise, not as a
// database that does not answer, whose outage the calls on connections
// the pool still holds ended and began again every few seconds.
func TestOutOfFilesIsOneOutageOfThisProcess(t *testing.T) {
	t.Parallel()
	cfg, err := pgconn.ParseConfig("postgres://u@127.0.0.1:1/db?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	}
	_, refused := pgconn.ConnectConfig(context.Background(), cfg)
	if refused == nil {
		t.Fatal("a dial that fails connected")
	}
	var logs bytes.Buffer
	o := &outage{log: slog.New(slog.NewTextHandler(&logs, nil))}
	for range 5 {
		if !o.failed(refused) {
			t.Fatal("a connection refused for want of a file descriptor was not taken for an outage")
		}
		// A call on a connection the pool still holds, a moment later.
		o.mu.Lock()
		o.last = time.Now().Add(-downQuiet)
		o.mu.Unlock()
		o.answered(time.Now())
	}
	got := logs.String()
	if n := strings.Count(got, "level=WARN"); n != 1 || !strings.Contains(got, "file descriptor") || !strings.Contains(got, "ulimit -n") ||
		strings.Contains(got, "does not answer") || strings.Contains(got, "carry on") {
		t.Fatalf("five connections refused with EMFILE between calls that worked: %d warnings; want one naming the process's limit of open files, and no end:\n%s", n, got)
	}
}
