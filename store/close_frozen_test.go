package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A connection whose path froze while it sat idle is pinged as it is
// handed out; a caller that gives up on that ping leaves it to its bound,
// and closing the store waits for it no longer than that: a worker
// stopped during a failover took half a minute more to exit after saying
// it had stopped, past a supervisor's grace period.
func TestCloseWhileAPingHangsOnAFrozenPath(t *testing.T) {
	t.Parallel()
	proxy := pgtest.NewFreezingProxy(t, pgtest.URL(t))
	s := pgtest.OpenStore(t, proxy.URL())
	ctx := testContext(t)
	if _, err := s.Pool().Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // idle long enough to be pinged
	proxy.Freeze()
	// Cancelled, without a deadline, as a stop cancels a worker's calls.
	stopped, cancel := context.WithCancel(ctx)
	defer time.AfterFunc(200*time.Millisecond, cancel).Stop()
	if _, err := s.Pool().Exec(stopped, `SELECT 1`); err == nil {
		t.Fatal("a statement on a frozen path was answered")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the store did not close within 30s of a ping left on a frozen path; its bound is 5s")
	}
}

// A statement given up behind a paused PgBouncer, at the bound of its
// call, leaves pgx closing its connection in the background: it asks
// PgBouncer to cancel the statement and waits for the connection's end,
// which a paused PgBouncer holds for pgx's 15 seconds. Closing the store
// waited for that too, so a command or server behind a paused PgBouncer
// exited 15 seconds after its error or its stop. Close now closes the
// socket pgx gave up on, and returns at once.
func TestCloseAfterAStatementGivenUpBehindAPausedBouncer(t *testing.T) {
	t.Parallel()
	b := bouncertest.Start(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	s, err := store.Open(ctx, b.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	b.Pause(t)
	if err := s.Ping(store.WithStatementTimeout(ctx, 300*time.Millisecond)); err == nil {
		t.Fatal("a ping through a paused PgBouncer was answered")
	}
	if n := store.OpenSockets(s); n == 0 {
		t.Fatal("no socket open after the ping given up: pgx closed it at once, and the test shows nothing")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	// Not a measure of speed: a Close that waits out pgx's 15 seconds
	// fails it, one that returns at once passes with room to spare.
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the store did not close within 10s of a statement given up behind a paused PgBouncer: it waits for pgx's 15s close of the connection")
	}
	if n := store.OpenSockets(s); n != 0 {
		t.Errorf("%d sockets of the store open after Close; want none", n)
	}
}
