package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

// On a standby whose primary has an older schema, the check says to
// migrate the primary, which the standby follows, and Migrate says the
// same without trying DDL the standby cannot take.
func TestSchemaCheckOnAStandbySaysToMigrateThePrimary(t *testing.T) {
	t.Parallel()
	primaryURL, standbyURL := pgtest.Standby(t)
	primary := openStore(t, primaryURL)
	ctx := testContext(t)
	if _, err := primary.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := primary.Pool().Exec(ctx, `DELETE FROM pgbus.schema_migrations WHERE version = $1`, len(all)); err != nil {
		t.Fatal(err)
	}
	pgtest.CaughtUp(t, primaryURL, standbyURL)
	standby := openStore(t, standbyURL)
	for name, call := range map[string]func() error{
		"CheckSchema": func() error { _, err := standby.CheckSchema(ctx); return err },
		"Migrate":     func() error { _, err := standby.Migrate(ctx); return err },
	} {
		err := call()
		if !errors.Is(err, store.ErrSchemaOld) || !errors.Is(err, store.ErrStandby) ||
			!strings.Contains(err.Error(), "this server is a standby (a read replica), which takes no writes and follows the primary's schema: migrate the primary") ||
			strings.Contains(err.Error(), "pgbus migrate") ||
			strings.Contains(err.Error(), "read-only transaction") {
			t.Errorf("%s on the standby: %v; want ErrSchemaOld and ErrStandby, saying to migrate the primary", name, err)
		}
	}
	// On the primary, the same check asks for a migration as ever.
	if _, err := primary.CheckSchema(ctx); !errors.Is(err, store.ErrSchemaOld) || errors.Is(err, store.ErrStandby) {
		t.Errorf("CheckSchema on the primary: %v; want ErrSchemaOld alone", err)
	}
}

// A primary whose transactions are read-only by default (the role's or
// database's default_transaction_read_only) is no standby: Migrate says
// which setting refuses it, not that the role lacks a privilege.
func TestMigrateOnAReadOnlyDefaultNamesTheSetting(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgtest.NewDatabaseSet(t, "default_transaction_read_only", "on"))
	_, err := s.Migrate(testContext(t))
	if !errors.Is(err, store.ErrSchemaMissing) || errors.Is(err, store.ErrStandby) || !strings.Contains(err.Error(), "which this server does not take") ||
		!strings.Contains(err.Error(), "SET default_transaction_read_only = off") {
		t.Fatalf("Migrate with read-only transactions by default: %v; want ErrSchemaMissing naming default_transaction_read_only", err)
	}
}

// A database holding schema pgbus without PGMQ's tables (a restore of
// schema pgbus alone) says so, not that pgbus's schema is missing, and
// names what brings PGMQ's tables back; Migrate, which cannot, says the
// same rather than fail on the first query of pgmq.meta.
func TestSchemaWithoutPGMQSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	url, s := newMigratedDatabase(t)
	pgtest.Exec(t, url, "DROP SCHEMA pgmq CASCADE")
	ctx := testContext(t)
	for name, call := range map[string]func() error{
		"CheckSchema": func() error { _, err := s.CheckSchema(ctx); return err },
		"Migrate":     func() error { _, err := s.Migrate(ctx); return err },
	} {
		err := call()
		if !errors.Is(err, store.ErrSchemaMissing) || !errors.Is(err, store.ErrPGMQMissing) ||
			!strings.Contains(err.Error(), "the database has the pgbus schema but not PGMQ's tables") || !strings.Contains(err.Error(), "pg_restore --schema pgmq") ||
			!strings.Contains(err.Error(), "installs PGMQ from its SQL script") || strings.Contains(err.Error(), "pgbus migrate") {
			t.Errorf("%s without schema pgmq: %v; want ErrPGMQMissing saying to restore schema pgmq", name, err)
		}
	}
	// What the error names works: PGMQ installed from its script, the
	// database migrates and is whole.
	if _, err := s.InstallPGMQ(ctx, pgtest.PGMQScript(t)); err != nil {
		t.Fatalf("InstallPGMQ where schema pgmq is gone: %v", err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate once PGMQ is installed: %v", err)
	}
	if _, err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema once PGMQ is installed: %v", err)
	}
}

// A URL that asks for a server taking writes (target_session_attrs
// read-write) and reaches only a standby says so, not to check the host
// and port it reached.
func TestConnectToOnlyAStandbyForWrites(t *testing.T) {
	t.Parallel()
	_, standbyURL := pgtest.Standby(t)
	s, err := store.Open(testContext(t), standbyURL+"&target_session_attrs=read-write")
	if err == nil {
		s.Close()
		t.Fatal("opened a standby as a server that takes writes")
	}
	if !strings.Contains(err.Error(), "take no writes (standbys, refused by its target_session_attrs=read-write): the primary is down or a failover is under way") ||
		strings.Contains(err.Error(), "host and port are right") {
		t.Fatalf("Open of a standby for writes: %v; want it to say the servers that answered are standbys", err)
	}
}
