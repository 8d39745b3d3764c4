package dbopen_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A fresh database fails the schema check, naming what is missing, until
// it is migrated; after that the check passes and reports the same version
// the migration did.
func TestPrepareChecksThenMigrates(t *testing.T) {
	ctx := pgtest.Context(t)
	url := pgtest.NewDatabase(t)
	open := func() *dbopen.DB {
		db, err := dbopen.Connect(ctx, dbopen.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	}
	db := open()
	if db.Embedded != nil || !strings.HasPrefix(db.Where(), "PostgreSQL at ") || db.Role() == "" {
		t.Fatalf("a database at a URL: embedded %v, where %q, role %q", db.Embedded, db.Where(), db.Role())
	}
	if err := db.Prepare(ctx, false); !errors.Is(err, store.ErrSchemaMissing) {
		t.Fatalf("check of a fresh database: %v, want ErrSchemaMissing", err)
	}
	if err := db.Prepare(ctx, true); err != nil || db.Status.Version == 0 {
		t.Fatalf("migrate: %v, status %+v", err, db.Status)
	}
	again := open()
	if err := again.Prepare(ctx, false); err != nil || again.Status.Version != db.Status.Version {
		t.Fatalf("check after migrating: %v, version %d, want %d", err, again.Status.Version, db.Status.Version)
	}
}
