//go:build linux || darwin

package store_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestOpenGivesUpOnAServerThatDoesNotAnswer: a server that takes
// connections but does not answer them (here a PostgreSQL whose postmaster
// is stopped with SIGSTOP, as on a frozen host) fails Open once the
// default connect timeout has passed, as unreachable and saying so, where
// Open waited for as long as the server stayed frozen.
func TestOpenGivesUpOnAServerThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	dir, c := pgtest.PrivateCluster(t)
	pid := postmasterPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Runs before the cluster's own cleanup stops it.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	done := make(chan error, 1)
	go func() {
		s, err := store.Open(context.Background(), c.URL())
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !store.IsUnreachable(err) || !strings.Contains(err.Error(), "did not answer in time") {
			t.Errorf("Open on a frozen server: %v; want an unreachable server that did not answer in time", err)
		}
	case <-time.After(3 * store.DefaultConnectTimeout):
		t.Fatal("Open still waits for a frozen server, long past the default connect timeout")
	}
}
