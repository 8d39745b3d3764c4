package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

var shared struct {
	once sync.Once
	s    *store.Store
	err  error
}

// Store returns a migrated store on the test database, shared by the tests
// of this test binary: tests keep apart by using names of their own (Name).
func Store(tb testing.TB) *store.Store {
	tb.Helper()
	url := URL(tb)
	shared.once.Do(func() {
		ctx := context.Background()
		shared.s, shared.err = store.Open(ctx, url)
		if shared.err == nil {
			UpLongAgo(shared.s)
			_, shared.err = shared.s.Migrate(ctx)
		}
	})
	if shared.err != nil {
		tb.Fatalf("pgtest: open the test store: %v", shared.err)
	}
	return shared.s
}

// OwnStore returns a store on the migrated test database, as Store does,
// but with a connection pool of its own (of a store's usual size), closed
// when the test ends. Parallel tests that hold a connection while they
// wait for another (a lock's holder and its waiter) could take every
// connection of one shared pool and wait for each other until their
// contexts end.
func OwnStore(tb testing.TB) *store.Store {
	tb.Helper()
	Store(tb) // migrates the test database once
	s, err := store.Open(Context(tb), URL(tb))
	if err != nil {
		tb.Fatalf("pgtest: open a store: %v", err)
	}
	UpLongAgo(s)
	tb.Cleanup(s.Close)
	return s
}

// UpLongAgo makes s judge worker processes by their heartbeats alone, as
// if the database had been up long before any of them (see
// store.Store.AssumeUpSince): tests set a heartbeat back in time to stand
// for a process that crashed then, on a server that may have started a
// moment ago, which would otherwise count the silence only from its
// start. Every store pgtest opens is so; a test of the count from the
// server's start goes back to it with AssumeUpSince(time.Time{}).
func UpLongAgo(s *store.Store) { s.AssumeUpSince(time.Unix(0, 0)) }

// Name returns prefix_ followed by 12 random hex digits: a queue or breaker
// name no other test uses.
func Name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// Context returns a context that ends with the test, or after two minutes.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// Eventually polls cond every 20ms until it holds, failing the test with
// what was awaited when timeout passes first.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Int runs a query returning one integer, failing the test on error.
func Int(tb testing.TB, s *store.Store, sql string, args ...any) int {
	tb.Helper()
	var n int
	if err := s.Pool().QueryRow(Context(tb), sql, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
	return n
}

// OpenStore opens a store on the database at url (one of the test's own,
// from NewDatabase), migrates it, and closes it when the test ends.
func OpenStore(tb testing.TB, url string) *store.Store {
	tb.Helper()
	ctx := Context(tb)
	s, err := store.Open(ctx, url)
	if err != nil {
		tb.Fatalf("pgtest: open a store: %v", err)
	}
	UpLongAgo(s)
	tb.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		tb.Fatalf("pgtest: migrate: %v", err)
	}
	return s
}

// Live returns how many messages queue holds.
func Live(tb testing.TB, s *store.Store, queue string) int {
	tb.Helper()
	return Int(tb, s, `SELECT count(*) FROM pgmq."q_`+queue+`"`)
}

// Archived returns how many messages queue's archive holds.
func Archived(tb testing.TB, s *store.Store, queue string) int {
	tb.Helper()
	return Int(tb, s, `SELECT count(*) FROM pgmq."a_`+queue+`"`)
}

// OpenNamedStore opens a store on the test database whose connections,
// the listener's included, carry application_name name: a test that must
// terminate a store's connections finds them by that name in
// pg_stat_activity, and so never ends a connection of another test.
func OpenNamedStore(tb testing.TB, name string) *store.Store {
	tb.Helper()
	return OpenStore(tb, WithParam(tb, URL(tb), "application_name", name))
}

// WithParam returns base with the connection parameter key set to value
// (pool_max_conns for a pool's size); it accepts URLs and key=value
// connection strings.
func WithParam(tb testing.TB, base, key, value string) string {
	return editConnString(tb, base, key+"="+value, func(u *url.URL) {
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
	})
}
