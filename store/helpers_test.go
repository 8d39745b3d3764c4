package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testStore returns the migrated store shared by this package's tests;
// tests keep apart by using queues of their own (newQueue).
func testStore(t testing.TB) *store.Store { return pgtest.Store(t) }

// newQueue creates a queue with a unique name and drops it after the test.
func newQueue(t testing.TB, s *store.Store) string {
	t.Helper()
	return pgtest.NewQueue(t, s, "q")
}

func uniqueName(prefix string) string { return pgtest.Name(prefix) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }
