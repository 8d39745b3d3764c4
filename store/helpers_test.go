package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var shared struct {
	once sync.Once
	s    *store.Store
	err  error
}

// testStore returns a migrated store shared by the tests of this package;
// tests keep apart by using queues of their own (newQueue).
func testStore(t testing.TB) *store.Store {
	t.Helper()
	url := pgtest.URL(t)
	shared.once.Do(func() {
		ctx := context.Background()
		shared.s, shared.err = store.Open(ctx, url)
		if shared.err == nil {
			_, shared.err = shared.s.Migrate(ctx)
		}
	})
	if shared.err != nil {
		t.Fatalf("open test store: %v", shared.err)
	}
	return shared.s
}

// newQueue creates a queue with a unique name and drops it after the test.
func newQueue(t testing.TB, s *store.Store) string {
	t.Helper()
	name := uniqueName("q")
	ctx := testContext(t)
	if err := s.CreateQueue(ctx, name); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), name) })
	return name
}

func uniqueName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
