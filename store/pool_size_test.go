package store_test

import (
	"runtime"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A pool opened without pool_max_conns holds up to DefaultMaxConns
// connections for as many CPUs as Go uses: 4 at least, and 10 at most,
// however many cores the host has, where pgx's own default opened one a
// core (64 connections a process on a 64-core host). pool_max_conns in the
// URL sets it, higher or lower.
//
// It changes GOMAXPROCS for its length: it does not run in parallel.
func TestPoolSizeIsBoundedWhateverTheCores(t *testing.T) {
	ctx := testContext(t)
	url := pgtest.URL(t)
	for _, c := range []struct {
		procs    int
		maxConns string // in the URL
		want     int32
	}{
		{64, "", 10},
		{1, "", 4},
		{7, "", 7},
		{64, "3", 3},
		{1, "40", 40},
		// A value that holds the words is no setting of them.
		{64, "-", 10},
	} {
		url := url
		switch c.maxConns {
		case "":
		case "-":
			url = pgtest.WithParam(t, url, "application_name", "pool_max_conns")
		default:
			url = pgtest.WithParam(t, url, "pool_max_conns", c.maxConns)
		}
		was := runtime.GOMAXPROCS(c.procs)
		s, err := store.Open(ctx, url)
		runtime.GOMAXPROCS(was)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Pool().Config().MaxConns
		s.Close()
		if got != c.want {
			t.Errorf("GOMAXPROCS %d, pool_max_conns %q in the URL: the pool holds up to %d connections; want %d", c.procs, c.maxConns, got, c.want)
		}
	}
	if store.DefaultMaxConns(64) != 10 || store.DefaultMaxConns(2) != 4 {
		t.Errorf("DefaultMaxConns(64) = %d, DefaultMaxConns(2) = %d; want 10 and 4", store.DefaultMaxConns(64), store.DefaultMaxConns(2))
	}
}
