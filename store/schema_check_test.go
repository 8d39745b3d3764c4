package store_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newMigratedDatabase returns a database of the test's own, migrated, and
// a store on it as its owner.
func newMigratedDatabase(t *testing.T) (string, *store.Store) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	s := openStore(t, url)
	if _, err := s.Migrate(testContext(t)); err != nil {
		t.Fatal(err)
	}
	return url, s
}

func TestCheckSchemaMigrated(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	st, err := testStore(t).CheckSchema(testContext(t))
	if err != nil || st.Version != len(all) || st.Applied != 0 {
		t.Fatalf("check of a migrated database = %+v, %v; want version %d, nothing applied", st, err, len(all))
	}
}

// A database pgbus never migrated fails the check, which creates nothing.
func TestCheckSchemaMissing(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := openStore(t, url)
	_, err := s.CheckSchema(testContext(t))
	if !errors.Is(err, store.ErrSchemaMissing) || !strings.Contains(err.Error(), "migrate it with a role that may create tables") {
		t.Fatalf("check of an empty database: %v; want ErrSchemaMissing saying to migrate it", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('pgbus', 'pgmq')`); n != 0 {
		t.Fatalf("the check created %d schemas", n)
	}
}

// A schema that lacks the latest migration is old; the error names both
// versions.
func TestCheckSchemaOld(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	_, s := newMigratedDatabase(t)
	ctx := testContext(t)
	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgbus.schema_migrations WHERE version = $1`, len(all)); err != nil {
		t.Fatal(err)
	}
	st, err := s.CheckSchema(ctx)
	want := fmt.Sprintf("version %d, this pgbus needs %d; migrate it", len(all)-1, len(all))
	if !errors.Is(err, store.ErrSchemaOld) || !strings.Contains(err.Error(), want) || st.Version != len(all)-1 {
		t.Fatalf("check of an old schema = %+v, %v; want ErrSchemaOld with %q", st, err, want)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("check after migrate: %v", err)
	}
}

// A role that may not see the tables gets an error naming what it lacks and
// the grants that fix it; with them, the check passes.
func TestCheckSchemaWithoutPrivileges(t *testing.T) {
	t.Parallel()
	url, _ := newMigratedDatabase(t)
	ctx := testContext(t)
	role, roleURL := pgtest.NewRole(t, url)
	s := openStore(t, roleURL)
	_, err := s.CheckSchema(ctx)
	if !errors.Is(err, store.ErrPermission) || !store.IsPermissionDenied(err) ||
		!strings.Contains(err.Error(), "USAGE on schema pgbus") || !strings.Contains(err.Error(), store.ReadGrants(role)) {
		t.Fatalf("check as a role without privileges: %v; want ErrPermission naming USAGE and the grants", err)
	}

	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	if _, err := s.CheckSchema(ctx); !errors.Is(err, store.ErrPermission) || !strings.Contains(err.Error(), "SELECT on pgbus.schema_migrations") {
		t.Fatalf("check as a role with USAGE only: %v; want ErrPermission naming SELECT", err)
	}
	pgtest.Exec(t, url, store.ReadGrants(role))
	if _, err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("check as a role with the read grants: %v", err)
	}
}

// A role that may read the tables but not the id sequences sees stats with
// a lower bound of the messages sent; with SELECT on the sequences, the
// exact count.
func TestQueueStatsForRoleWithoutSequences(t *testing.T) {
	t.Parallel()
	url, owner := newMigratedDatabase(t)
	ctx := testContext(t)
	q := uniqueName("q")
	if err := owner.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	ids, err := owner.SendBatch(ctx, q, []store.NewMessage{{Payload: []byte(`{}`)}, {Payload: []byte(`{}`)}, {Payload: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	reader := openStore(t, roleURL)
	sent := func() int64 {
		t.Helper()
		stats, err := reader.QueueStats(ctx, q, store.QueueStatsOptions{Archive: true})
		if err != nil || len(stats) != 1 {
			t.Fatalf("stats as the reader: %+v, %v", stats, err)
		}
		return stats[0].TotalSent
	}
	if n := sent(); n != 3 {
		t.Fatalf("total sent as a reader of the tables, with the messages there: %d, want 3", n)
	}
	if _, err := owner.DeleteMany(ctx, q, ids); err != nil {
		t.Fatal(err)
	}
	if n := sent(); n < 0 || n > 3 {
		t.Fatalf("total sent as a reader of the tables, the messages gone: %d, want a lower bound of 3", n)
	}
	pgtest.Exec(t, url, "GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq TO "+role)
	if n := sent(); n != 3 {
		t.Fatalf("total sent as a reader of the sequences: %d, want 3", n)
	}
}

// A role that may read the tables but not the id sequences gets a queue's
// metrics, as it gets its stats, with the same lower bound of the messages
// sent; with SELECT on the sequences, the exact count.
func TestMetricsForRoleWithoutSequences(t *testing.T) {
	t.Parallel()
	url, owner := newMigratedDatabase(t)
	ctx := testContext(t)
	q := uniqueName("q")
	if err := owner.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.SendBatch(ctx, q, []store.NewMessage{{Payload: []byte(`{}`)}, {Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	reader := openStore(t, roleURL)
	m, err := reader.Metrics(ctx, q)
	if err != nil || m.Depth != 2 || m.TotalSent != 2 {
		t.Fatalf("metrics as a reader of the tables = %+v, %v; want depth 2, 2 sent", m, err)
	}
	pgtest.Exec(t, url, "GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq TO "+role)
	if m, err := reader.Metrics(ctx, q); err != nil || m.TotalSent != 2 {
		t.Fatalf("metrics as a reader of the sequences = %+v, %v; want 2 sent", m, err)
	}
}

// Migrate only reads a schema that is current: a role that may change rows
// but create nothing passes, with nothing applied; once the schema is
// old, the same role's Migrate fails for want of a privilege, and the
// owner's brings it back.
func TestMigrateCurrentSchemaNeedsNoDDL(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url, owner := newMigratedDatabase(t)
	ctx := testContext(t)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	s := openStore(t, roleURL)
	st, err := s.Migrate(ctx)
	if err != nil || st.Version != len(all) || st.Applied != 0 {
		t.Fatalf("migrate of a current schema as a role that creates nothing = %+v, %v; want version %d, nothing applied", st, err, len(all))
	}

	if _, err := owner.Pool().Exec(ctx, `DELETE FROM pgbus.schema_migrations WHERE version = $1`, len(all)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); !store.IsPermissionDenied(err) {
		t.Fatalf("migrate of an old schema as a role that creates nothing: %v; want permission denied", err)
	}
	if st, err := owner.Migrate(ctx); err != nil || st.Version != len(all) {
		t.Fatalf("the owner's migrate of the old schema = %+v, %v", st, err)
	}
}

// A role that may not read the pgbus schemas gets, from Migrate as from
// CheckSchema, the grants that would let it read them, where the schema is
// current and nothing is left to migrate.
func TestMigrateWithoutReadAccessSaysWhatToGrant(t *testing.T) {
	t.Parallel()
	url, _ := newMigratedDatabase(t)
	role, roleURL := pgtest.NewRole(t, url)
	s := openStore(t, roleURL)
	_, err := s.Migrate(testContext(t))
	if !errors.Is(err, store.ErrPermission) || !strings.Contains(err.Error(), store.ReadGrants(role)) {
		t.Fatalf("migrate of a current schema by a role that may not read it: %v; want ErrPermission with the grants to run", err)
	}
}

// A role that may change rows but not the schema, deployed with a newer
// pgbus before the database was migrated, is told which versions the
// database has and needs, and that it may not migrate: it was told only
// that it lacked a privilege.
func TestMigrateRefusedToARoleSaysTheSchemaIsOld(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url, s := newMigratedDatabase(t)
	ctx := testContext(t)
	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgbus.schema_migrations WHERE version = $1`, len(all)); err != nil {
		t.Fatal(err)
	}
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; "+
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	_, err = openStore(t, roleURL).Migrate(ctx)
	want := fmt.Sprintf("version %d, this pgbus needs %d; migrate it with a role that may create tables, which the role %s may not do", len(all)-1, len(all), role)
	if !errors.Is(err, store.ErrSchemaOld) || !store.IsPermissionDenied(err) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "; migrate as the role that owns schema pgbus, ") || strings.Contains(err.Error(), "pgbus migrate") {
		t.Fatalf("migrate as a role that may not: %v; want ErrSchemaOld and the refusal, saying %q and who may", err, want)
	}
	// Before there is a schema, the database's owner may.
	empty := pgtest.NewDatabase(t)
	role, roleURL = pgtest.NewRole(t, empty)
	_, err = openStore(t, roleURL).Migrate(ctx)
	if !errors.Is(err, store.ErrSchemaMissing) || !store.IsPermissionDenied(err) || !strings.Contains(err.Error(), "which the role "+role+" may not do") ||
		!regexp.MustCompile(`; migrate as the database's owner, \S+, or a role it grants CREATE ON DATABASE \S+$`).MatchString(err.Error()) || strings.Contains(err.Error(), "pgbus migrate") {
		t.Fatalf("migrate of an empty database as a role that may not: %v; want ErrSchemaMissing and the refusal, naming the database's owner", err)
	}

}

// A send's first statement on a database never migrated says the schema is
// missing and to migrate, as the operations and Run do, not that a table
// does not exist.
func TestPhysicalQueuesOfAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgtest.NewDatabase(t))
	_, err := s.PhysicalQueues(testContext(t), "orders")
	if !errors.Is(err, store.ErrSchemaMissing) || !strings.Contains(err.Error(), "migrate it first") {
		t.Fatalf("physical queues on an unmigrated database: %v; want ErrSchemaMissing saying to migrate", err)
	}
}
