package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

// newerDatabase returns a migrated database, with a queue orders whose
// DLQ lacks the filter statistics Migrate repairs, and a store on it as
// its owner, and the migrations this pgbus has.
func newerDatabase(t *testing.T) (string, *store.Store, []schema.Migration) {
	t.Helper()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url, s := newMigratedDatabase(t)
	if err := s.CreateQueue(testContext(t), "orders"); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `DROP STATISTICS pgmq.q_orders_dlq_filter_stats`)
	return url, s, all
}

// recordNewer records in url's pgbus.schema_migrations the migration a
// newer pgbus would apply next, as that pgbus's migrate leaves it.
func recordNewer(t *testing.T, url string, all []schema.Migration) {
	t.Helper()
	pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus')`, len(all)+1))
}

func dlqStatistics(t *testing.T, s *store.Store) int {
	t.Helper()
	return pgtest.Int(t, s, `SELECT count(*) FROM pg_statistic_ext WHERE stxname = 'q_orders_dlq_filter_stats'`)
}

// A database a newer pgbus migrated is checked as it is, its version the
// newer one, and Migrate changes nothing of it: no migration, and no
// repair of a DLQ, which is the newer pgbus's to make as it sees fit. An
// older pgbus rolled back to, or still running beside the newer one,
// repaired DLQs after its own notion.
func TestMigrateLeavesANewerSchemaAsItIs(t *testing.T) {
	t.Parallel()
	url, s, all := newerDatabase(t)
	recordNewer(t, url, all)
	ctx := testContext(t)

	st, err := s.CheckSchema(ctx)
	if err != nil || st.Version != len(all)+1 || st.Known != len(all) || !st.Newer() {
		t.Fatalf("check of a newer schema = %+v, %v; want version %d, known %d, newer", st, err, len(all)+1, len(all))
	}
	st, err = s.Migrate(ctx)
	if err != nil || st.Version != len(all)+1 || st.Known != len(all) || !st.Newer() || st.Applied != 0 || len(st.DLQsRepaired) != 0 {
		t.Fatalf("migrate of a newer schema = %+v, %v; want version %d, known %d, nothing applied or repaired", st, err, len(all)+1, len(all))
	}
	if n := dlqStatistics(t, s); n != 0 {
		t.Fatalf("migrate of a newer schema gave the DLQ %d filter statistics; want it left as it was", n)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.schema_migrations`); n != len(all)+1 {
		t.Fatalf("pgbus.schema_migrations has %d rows after migrate, want %d", n, len(all)+1)
	}
}

// A newer pgbus's record that lacks migrations of this one (it recorded
// its own history otherwise) is not taken for an old schema: CheckSchema
// and Migrate refuse it with ErrSchemaNewer, saying to upgrade, and apply
// nothing. Migrate took it for an old schema and applied every migration
// of this pgbus over the newer one.
func TestMigrateRefusesANewerSchemaItCannotRead(t *testing.T) {
	t.Parallel()
	url, s, all := newerDatabase(t)
	recordNewer(t, url, all)
	pgtest.Exec(t, url, fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version <= %d`, len(all)))
	ctx := testContext(t)

	want := fmt.Sprintf("migrated by a newer pgbus: it records pgbus schema version %d, this pgbus has versions up to %d, and the record lacks version 1",
		len(all)+1, len(all))
	for name, run := range map[string]func() (store.MigrationStatus, error){"check": func() (store.MigrationStatus, error) { return s.CheckSchema(ctx) }, "migrate": func() (store.MigrationStatus, error) { return s.Migrate(ctx) }} {
		_, err := run()
		if !errors.Is(err, store.ErrSchemaNewer) || errors.Is(err, store.ErrSchemaOld) ||
			!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "upgrade this pgbus") {
			t.Fatalf("%s of a newer schema lacking this pgbus's migrations: %v; want ErrSchemaNewer saying %q and to upgrade", name, err, want)
		}
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.schema_migrations`); n != 1 {
		t.Fatalf("pgbus.schema_migrations has %d rows after migrate, want the newer pgbus's 1", n)
	}
	if n := dlqStatistics(t, s); n != 0 {
		t.Fatalf("migrate of a newer schema gave the DLQ %d filter statistics; want it left as it was", n)
	}
}

// A newer pgbus that migrates while this one waits for the migration lock
// to apply its last migration: once it has the lock, this one reads the
// newer record and leaves the schema as it is, reporting the newer
// version. It applied nothing then but repaired DLQs after its own notion
// and reported its own version as the database's.
func TestMigrateAfterANewerPgbusMigratedMeanwhile(t *testing.T) {
	t.Parallel()
	url, s, all := newerDatabase(t)
	pgtest.Exec(t, url, fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version = %d`, len(all)))
	ctx := testContext(t)
	newer, _ := holdInTx(t, url, "newer-migrator", `SELECT pg_advisory_xact_lock($1)`, store.MigrationLockKey)

	type result struct {
		st  store.MigrationStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := s.Migrate(ctx)
		done <- result{st, err}
	}()
	pgtest.Eventually(t, time.Minute, "Migrate to wait for the migration lock", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) > 0
	})
	for _, v := range []int{len(all), len(all) + 1} {
		if _, err := newer.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, 'by_the_newer_pgbus')`, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.st.Version != len(all)+1 || !r.st.Newer() || r.st.Applied != 0 || len(r.st.DLQsRepaired) != 0 {
		t.Fatalf("migrate after a newer pgbus migrated meanwhile = %+v, %v; want version %d, nothing applied or repaired", r.st, r.err, len(all)+1)
	}
	if n := dlqStatistics(t, s); n != 0 {
		t.Fatalf("migrate gave the DLQ %d filter statistics; want it left to the newer pgbus", n)
	}
}
