package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// pgmqFirstByAnother returns a database where the test's superuser loaded
// PGMQ's script, and a role that may create schemas in it but has no
// privilege on schema pgmq, with the URL that connects as it.
func pgmqFirstByAnother(t *testing.T) (url, role, roleURL string) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgtest.RunSQL(t, url, pgtest.PGMQScript(t)); err != nil {
		t.Fatalf("load PGMQ's script: %v", err)
	}
	role, roleURL = pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT CREATE ON DATABASE "+pgx.Identifier{cfg.Database}.Sanitize()+" TO "+role)
	return url, role, roleURL
}

// A first migration that fails leaves nothing behind: no schema pgbus and
// no record of migrations, owned by the role that failed, which would make
// the next attempt a schema out of date and split the schema's ownership
// once another role migrates.
func TestFailedFirstMigrationLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url, _, roleURL := pgmqFirstByAnother(t)
	if _, err := openStore(t, roleURL).Migrate(ctx); !store.IsPermissionDenied(err) {
		t.Fatalf("first migration by a role without privileges on schema pgmq = %v; want it refused", err)
	}
	owner := openStore(t, url)
	if n := pgtest.Int(t, owner, `SELECT count(*) FROM pg_namespace WHERE nspname = 'pgbus'`); n != 0 {
		t.Fatalf("schema pgbus exists after a first migration that failed; want nothing of it left")
	}
	if _, err := owner.Migrate(ctx); err != nil {
		t.Fatalf("migrate as the owner of schema pgmq after the failure: %v", err)
	}
	if n := pgtest.Int(t, owner, `
		SELECT count(*) FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid
		WHERE n.nspname = 'pgbus' AND (c.relowner <> n.nspowner OR n.nspowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user))`); n != 0 {
		t.Fatalf("%d relations of schema pgbus, or the schema, are owned by another role than the one that migrated", n)
	}
}

// A role that may create schemas but has no privilege on schema pgmq,
// which another role made, is told who may migrate: the owner of schema
// pgmq, or itself once granted what it lacks there. The same advice comes
// again on the next attempt, and where an older pgbus left an empty record
// of migrations owned by it: it is migrating, and the grants that let a
// role read would not let it.
func TestMigrateWithoutPrivilegesOnPGMQNamesItsOwner(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url, role, roleURL := pgmqFirstByAnother(t)
	owner := openStore(t, url)
	var pgmqOwner string
	if err := owner.Pool().QueryRow(ctx, `SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'pgmq'`).Scan(&pgmqOwner); err != nil {
		t.Fatal(err)
	}
	grants := "GRANT USAGE, CREATE ON SCHEMA pgmq TO " + role + "; GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.meta TO " + role
	advice := "; migrate as the role that owns schema pgmq, " + pgmqOwner + ", or let " + role + " migrate: as " + pgmqOwner + ", " + grants
	s := openStore(t, roleURL)
	check := func(what string, err error, kind error) {
		t.Helper()
		if !errors.Is(err, kind) || !store.IsPermissionDenied(err) || !strings.HasSuffix(err.Error(), advice) ||
			strings.Contains(err.Error(), "owns schema pgbus, "+role) || strings.Contains(err.Error(), store.ReadGrants(role)) {
			t.Fatalf("%s: %v; want %v, refused, ending in %q", what, err, kind, advice)
		}
	}
	_, first := s.Migrate(ctx)
	check("first migration", first, store.ErrSchemaMissing)
	_, second := s.Migrate(ctx)
	check("second migration", second, store.ErrSchemaMissing)
	if first.Error() != second.Error() {
		t.Fatalf("the second migration's error differs from the first's:\n first %v\nsecond %v", first, second)
	}

	// What an older pgbus left after the same failure.
	pgtest.Exec(t, roleURL, "CREATE SCHEMA pgbus; CREATE TABLE pgbus.schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
	_, err := s.Migrate(ctx)
	check("migration over an empty record", err, store.ErrSchemaOld)
	if !strings.Contains(err.Error(), "which the role "+role+" may not do: it lacks USAGE on schema pgmq") {
		t.Fatalf("migration over an empty record: %v; want it to say what the role lacks", err)
	}

	// The advice, followed, lets the role migrate and make queues.
	pgtest.Exec(t, url, grants)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate as %s once granted %q: %v", role, grants, err)
	}
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatalf("create a queue as %s once it migrated: %v", role, err)
	}
}

// A role that may only connect to the database, owning schemas pgmq and
// pgbus that a DBA made for it (CREATE SCHEMA ... AUTHORIZATION), migrates
// a fresh database and creates queues: no migration asks for the database's
// CREATE privilege, which CREATE SCHEMA IF NOT EXISTS checks even when the
// schema exists.
func TestMigrateInSchemasMadeForTheRole(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "CREATE SCHEMA pgmq AUTHORIZATION "+role+"; CREATE SCHEMA pgbus AUTHORIZATION "+role)
	s := openStore(t, roleURL)
	if n := pgtest.Int(t, s, `SELECT count(*) FROM (VALUES ('CREATE'), ('CONNECT')) p(priv) WHERE has_database_privilege(current_database(), p.priv)`); n != 1 {
		t.Fatalf("the role holds %d of CREATE and CONNECT on the database; want CONNECT alone", n)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate as a role owning schemas pgmq and pgbus, without CREATE on the database: %v", err)
	}
	if st, err := s.CheckSchema(ctx); err != nil || st.Version != st.Known {
		t.Fatalf("schema after migrating = %+v, %v; want current", st, err)
	}
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatalf("create a queue: %v", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('pgmq', 'pgbus') AND nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)`); n != 2 {
		t.Fatalf("%d of schemas pgmq and pgbus are owned by the role; want both, as made", n)
	}
}
