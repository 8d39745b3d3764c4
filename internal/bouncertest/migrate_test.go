package bouncertest_test

import (
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

// TestMigrateThroughBouncer migrates a fresh database from several
// processes at once through the pooler: each migration is applied once, and
// the lock that orders them is not left behind on a server connection (a
// direct migration afterwards does not wait for it).
func TestMigrateThroughBouncer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	b := bouncertest.Start(t, dbURL)
	ctx := pgtest.Context(t)
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	latest := all[len(all)-1].Version

	const procs = 4
	stores := make([]*store.Store, procs)
	for i := range stores {
		s, err := store.Open(ctx, b.URL())
		if err != nil {
			t.Fatalf("open a store through pgbouncer: %v", err)
		}
		t.Cleanup(s.Close)
		stores[i] = s
	}
	var wg sync.WaitGroup
	applied := make([]int, procs)
	errs := make([]error, procs)
	for i, s := range stores {
		wg.Go(func() {
			st, err := s.Migrate(ctx)
			applied[i], errs[i] = st.Applied, err
			if err == nil && st.Version != latest {
				t.Errorf("store %d: migrated to version %d, want %d", i, st.Version, latest)
			}
		})
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: migrate through pgbouncer: %v", i, err)
		}
		total += applied[i]
	}
	if total != len(all) {
		t.Errorf("the stores applied %d migrations between them, want each of the %d once", total, len(all))
	}
	direct := pgtest.OpenStore(t, dbURL) // migrates: it must not wait on a lock left on a pooled connection
	if n := pgtest.Int(t, direct, `SELECT count(*) FROM pgbus.schema_migrations`); n != len(all) {
		t.Errorf("schema_migrations holds %d rows, want %d", n, len(all))
	}
	for i := range 3 { // again through the pooler: nothing to apply, nothing stuck
		st, err := stores[i%procs].Migrate(ctx)
		if err != nil || st.Applied != 0 || st.Version != latest {
			t.Fatalf("migrate again through pgbouncer: %+v, %v; want nothing applied at version %d", st, err, latest)
		}
	}
}
