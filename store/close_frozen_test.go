package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
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
