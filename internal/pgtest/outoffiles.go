package pgtest

import (
	"context"
	"net"
	"os"
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
