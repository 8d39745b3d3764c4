package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

func TestMigrateIsIdempotent(t *testing.T) {
	s := testStore(t)
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Migrate(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Applied != 0 || st.Version != len(all) {
		t.Fatalf("second migrate = %+v, want 0 applied at version %d", st, len(all))
	}
}

// Several processes starting at once each run Migrate; the advisory lock
// makes them queue, and the schema is applied exactly once.
func TestConcurrentMigrateOnFreshDatabase(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := testContext(t)
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	stores := make([]*store.Store, n)
	for i := range stores {
		if stores[i], err = store.Open(ctx, url); err != nil {
			t.Fatal(err)
		}
		defer stores[i].Close()
	}
	var wg sync.WaitGroup
	results := make([]store.MigrationStatus, n)
	errs := make([]error, n)
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = stores[i].Migrate(ctx)
		}()
	}
	wg.Wait()
	applied := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrate %d: %v", i, errs[i])
		}
		if results[i].Version != len(all) {
			t.Fatalf("migrate %d ended at version %d, want %d", i, results[i].Version, len(all))
		}
		applied += results[i].Applied
	}
	if applied != len(all) {
		t.Fatalf("migrations applied %d times in all, want %d (once each)", applied, len(all))
	}
	var rows int
	if err := stores[0].Pool().QueryRow(context.Background(), `SELECT count(*) FROM pgbus.schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(all) {
		t.Fatalf("schema_migrations has %d rows, want %d", rows, len(all))
	}
}
