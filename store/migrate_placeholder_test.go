package store_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// An early build of pgbus recorded version 10 as "reserved", a placeholder
// that changed nothing, and applied 11 and 12 over it. Migrating such a
// database applies the real 10, then 11 and 12 again after it, in order,
// and the rest: it reaches the current schema instead of stopping at 13,
// which needs what 10 makes, with version 12 applied and every command
// refused.
func TestMigrateOverThePlaceholderOfVersion10(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url, all := databaseAtVersion(t, 9)
	conn := connect(t, url, "")
	if _, err := conn.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES (10, 'reserved')`); err != nil {
		t.Fatal(err)
	}
	for _, m := range all[10:12] { // 11 and 12, as the early build applied them
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("migration %d over the placeholder: %v", m.Version, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	s := pgtest.OpenStore(t, url)
	st, err := s.Migrate(ctx)
	if err != nil {
		t.Fatalf("migrate over the placeholder of version 10: %v", err)
	}
	if st.Version != len(all) {
		t.Errorf("migrated to version %d, want %d", st.Version, len(all))
	}
	if _, err := s.CheckSchema(ctx); err != nil {
		t.Errorf("the schema check after the migration: %v", err)
	}
	var name, norm string
	if err := conn.QueryRow(ctx, `SELECT name, pgbus.dlq_error_norm('card "x-1" declined: order 42') FROM pgbus.schema_migrations WHERE version = 10`).Scan(&name, &norm); err != nil {
		t.Fatal(err)
	}
	if name != all[9].Name || norm != "card <str> declined: order <n>" {
		t.Errorf("version 10 recorded as %q, the error norm %q; want %q, and the norm of the last migration that wrote it", name, norm, all[9].Name)
	}
}

// A version recorded under another name than this pgbus's, not the
// placeholder, is another build's migration: nothing is applied, and the
// error says so.
func TestMigrateRefusesAnotherBuildsMigration(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url, _ := databaseAtVersion(t, 5)
	conn := connect(t, url, "")
	if _, err := conn.Exec(ctx, `UPDATE pgbus.schema_migrations SET name = 'someone_elses' WHERE version = 3`); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Migrate(ctx)
	if err == nil || !strings.Contains(err.Error(), `records version 3 as "someone_elses"`) || !strings.Contains(err.Error(), "nothing was applied") {
		t.Errorf("migrate with version 3 of another name: %v; want a refusal naming it", err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM pgbus.schema_migrations`).Scan(&n); err != nil || n != 5 {
		t.Errorf("the database is at version %d (%v) after the refusal, want 5", n, err)
	}
}
