package store_test

import (
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
