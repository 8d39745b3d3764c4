package pgtest

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/store"
)

// OutOfFilesStore returns a store on the migrated test database whose new
// connections fail, once runOut is called, as a process with no file
// descriptor left fails them (a low ulimit -n): its socket call refused
// with EMFILE, the database never asked. runOut also ends the
// connections the pool holds, so that the next call opens one.
func OutOfFilesStore(tb testing.TB) (st *store.Store, runOut func()) {
	tb.Helper()
	Store(tb) // migrates the test database
	cfg, err := pgxpool.ParseConfig(URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	store.ConfigurePool(cfg)
	out := make(chan struct{})
	var dialer net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case <-out:
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", syscall.EMFILE)}
		default:
			return dialer.DialContext(ctx, network, addr)
		}
	}
	pool, err := pgxpool.NewWithConfig(Context(tb), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	st = store.New(pool)
	tb.Cleanup(st.Close)
	return st, func() { close(out); pool.Reset() }
}

// OutOfFilesListener returns ln failing its first failures accepts as a
// process with no file descriptor left fails them (EMFILE), then
// accepting.
func OutOfFilesListener(ln net.Listener, failures int32) net.Listener {
	l := &outOfFilesListener{Listener: ln}
	l.left.Store(failures)
	return l
}

type outOfFilesListener struct {
	net.Listener
	left atomic.Int32
}

func (l *outOfFilesListener) Accept() (net.Conn, error) {
	if l.left.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}
