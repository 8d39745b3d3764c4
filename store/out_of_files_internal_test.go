package store

import (
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// outOfFilesConnect is the error pgx gives a connection this process
// could not open for want of a file descriptor: its socket refused with
// EMFILE, as under a low ulimit -n.
func outOfFilesConnect(t *testing.T) error {
	t.Helper()
	cfg, err := pgconn.ParseConfig("postgres://u@127.0.0.1:1/db?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	}
	_, err = pgconn.ConnectConfig(context.Background(), cfg)
	if err == nil {
		t.Fatal("a dial that fails connected")
	}
	return err
}

// A connection refused by this process's own limit of open files says
// so, and what to raise: the database was never asked, and checking that
// it runs, or its host and port, leads nowhere.
func TestConnectAdviceOfAProcessOutOfFiles(t *testing.T) {
	t.Parallel()
	err := outOfFilesConnect(t)
	got := connectAdvice(err)
	if !strings.Contains(got, "file descriptor") || !strings.Contains(got, "ulimit -n") || strings.Contains(got, "server is running") {
		t.Errorf("advice for a socket refused with EMFILE: %q; want the process's limit of open files, not the server", got)
	}
}
