package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
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
// makes them queue, and the schema is applied exactly once, whatever
// isolation a DBA makes the database's default: a migrator that waited for
// the lock sees what the one before it applied.
func TestConcurrentMigrateOnFreshDatabase(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{"read committed", "repeatable read", "serializable"} {
		t.Run(strings.ReplaceAll(iso, " ", "_"), func(t *testing.T) {
			t.Parallel() // each isolation on a database of its own
			concurrentMigrate(t, pgtest.NewDatabaseSet(t, "default_transaction_isolation", iso))
		})
	}
}

// concurrentMigrate runs Migrate from several stores on the fresh
// database at url at once, and checks each migration was applied once.
func concurrentMigrate(t *testing.T, url string) {
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

// workersMigrationPending creates a fresh database migrated up to version
// 17, as an older pgbus left it, so that migration 18, which adds a column
// to pgbus.workers, is pending. It returns the database's URL, every
// migration, and a connection of the test's own to it.
func workersMigrationPending(t *testing.T) (string, []schema.Migration, *pgx.Conn) {
	t.Helper()
	url, all := databaseAtVersion(t, 17)
	if m := all[17]; !strings.Contains(m.SQL, "ALTER TABLE pgbus.workers") {
		t.Fatalf("migration 18 (%s) no longer alters pgbus.workers: pick another pending migration and the table it locks", m.Name)
	}
	return url, all, connect(t, url, "")
}

// holdInTx begins a transaction on a connection of its own to url, runs
// sql in it and leaves it open, idle in transaction with the locks sql took,
// as a forgotten session or a long report would. It returns the
// transaction and the pid of its backend.
func holdInTx(t *testing.T, url, app, sql string, args ...any) (pgx.Tx, int) {
	t.Helper()
	ctx := testContext(t)
	conn := connect(t, url, app)
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}

// workersMigrated reports whether migration 18 is recorded and whether the
// column it adds exists.
func workersMigrated(t *testing.T, conn *pgx.Conn) (recorded, column bool) {
	t.Helper()
	err := conn.QueryRow(testContext(t), `SELECT
		EXISTS (SELECT 1 FROM pgbus.schema_migrations WHERE version = 18),
		EXISTS (SELECT 1 FROM information_schema.columns
		        WHERE table_schema = 'pgbus' AND table_name = 'workers' AND column_name = 'heartbeat_interval_ms')`).Scan(&recorded, &column)
	if err != nil {
		t.Fatal(err)
	}
	return recorded, column
}

// waitersOnWorkers counts the backends waiting for a lock on pgbus.workers.
func waitersOnWorkers(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	err := conn.QueryRow(testContext(t), `SELECT count(*) FROM pg_locks
		WHERE NOT granted AND relation = 'pgbus.workers'::regclass
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A migration whose table a long transaction holds waits for it only a
// moment at a time (lock_timeout), so the queries queued behind it are held
// up no longer, and gives up after its retries with nothing applied and an
// error naming the backend to end. The transaction in the way is left
// alone, and once it ends the migration applies. Through PgBouncer in
// transaction mode too: the bounds are SET LOCAL, and the watch names the
// server's pid.
func TestMigrationBehindALongTransactionGivesUp(t *testing.T) {
	for _, via := range []string{"direct", "pgbouncer"} {
		t.Run(via, func(t *testing.T) {
			store.SetMigrationLockWaits(t, 300*time.Millisecond, 50*time.Millisecond, 1500*time.Millisecond, time.Minute)
			dbURL, all, check := workersMigrationPending(t)
			url := dbURL
			if via == "pgbouncer" {
				url = bouncertest.Start(t, dbURL).URL()
			}
			s, err := store.Open(testContext(t), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			holder, pid := holdInTx(t, dbURL, "report", `SELECT count(*) FROM pgbus.workers`)

			// Well below the test's context: a migration that waits on
			// fails with the deadline, which the checks below tell apart.
			ctx, cancel := context.WithTimeout(testContext(t), 20*time.Second)
			defer cancel()
			_, err = s.Migrate(ctx)
			if err == nil {
				t.Fatal("migrate succeeded while a transaction held pgbus.workers")
			}
			if ctx.Err() != nil {
				t.Fatalf("migrate waited until its context ended instead of giving up: %v", err)
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
				t.Errorf("error does not wrap PostgreSQL's lock_not_available (55P03): %v", err)
			}
			for _, want := range []string{
				fmt.Sprintf("migration 18 (%s)", all[17].Name),
				"a lock on pgbus.workers (AccessExclusiveLock)",
				fmt.Sprintf("held by pid %d (idle in transaction, in a transaction since ", pid),
				`application "report"`,
				"nothing of it was applied",
				fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid),
				"and migrate again",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if recorded, column := workersMigrated(t, check); recorded || column {
				t.Fatalf("after giving up: migration 18 recorded %v, its column added %v; want neither", recorded, column)
			}
			if n := waitersOnWorkers(t, check); n != 0 {
				t.Errorf("%d backends still wait for pgbus.workers after migrate gave up", n)
			}

			// The holder's transaction goes on and commits.
			ctx = testContext(t)
			if _, err := holder.Exec(ctx, `SELECT count(*) FROM pgbus.workers`); err != nil {
				t.Fatalf("the holder's transaction was harmed: %v", err)
			}
			if err := holder.Commit(ctx); err != nil {
				t.Fatalf("the holder's transaction could not commit: %v", err)
			}
			st, err := s.Migrate(ctx)
			if err != nil || st.Applied != len(all)-17 || st.Version != len(all) {
				t.Fatalf("migrate once the holder committed = %+v, %v; want %d applied, version %d", st, err, len(all)-17, len(all))
			}
			if recorded, column := workersMigrated(t, check); !recorded || !column {
				t.Fatalf("after migrating: migration 18 recorded %v, its column added %v; want both", recorded, column)
			}
		})
	}
}

// A lock held for less than the migration's retries last costs a try or
// two: the try that timed out is rolled back, and the next one, after the
// holder's transaction ended, applies the migration.
func TestMigrationRetriesAfterALockTimeout(t *testing.T) {
	// A long pause between the tries, so that the test sees the first one
	// end (no one waits for the table) before the second begins.
	store.SetMigrationLockWaits(t, 200*time.Millisecond, 2*time.Second, 30*time.Second, time.Minute)
	url, all, check := workersMigrationPending(t)
	s, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	holder, _ := holdInTx(t, url, "", `SELECT count(*) FROM pgbus.workers`)

	type result struct {
		st  store.MigrationStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := s.Migrate(testContext(t))
		done <- result{st, err}
	}()
	pgtest.Eventually(t, time.Minute, "the migration to wait for pgbus.workers",
		func() bool { return waitersOnWorkers(t, check) > 0 })
	pgtest.Eventually(t, time.Minute, "the migration's first try to time out",
		func() bool { return waitersOnWorkers(t, check) == 0 })
	select {
	case r := <-done:
		t.Fatalf("migrate returned after its first lock timeout instead of trying again: %+v, %v", r.st, r.err)
	default:
	}
	if recorded, column := workersMigrated(t, check); recorded || column {
		t.Fatalf("after the first try: migration 18 recorded %v, its column added %v; want neither", recorded, column)
	}
	if err := holder.Commit(testContext(t)); err != nil {
		t.Fatalf("the holder's transaction could not commit: %v", err)
	}
	r := <-done
	if r.err != nil || r.st.Applied != len(all)-17 {
		t.Fatalf("migrate = %+v, %v; want %d applied", r.st, r.err, len(all)-17)
	}
	if recorded, column := workersMigrated(t, check); !recorded || !column {
		t.Fatalf("after migrating: migration 18 recorded %v, its column added %v; want both", recorded, column)
	}
}

// A migration that waits for a table is stopped by its context, between
// its tries or in one, with nothing applied and the holder named.
func TestMigrationStopsWithItsContext(t *testing.T) {
	// Each try waits long enough for the watch to see it on a loaded machine.
	store.SetMigrationLockWaits(t, time.Second, 50*time.Millisecond, time.Minute, time.Minute)
	url, _, check := workersMigrationPending(t)
	s, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	_, pid := holdInTx(t, url, "", `SELECT count(*) FROM pgbus.workers`)

	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Migrate(ctx)
		done <- err
	}()
	// Two tries waited: the first timed out, the second began to wait.
	pgtest.Eventually(t, time.Minute, "the migration to wait for pgbus.workers",
		func() bool { return waitersOnWorkers(t, check) > 0 })
	pgtest.Eventually(t, time.Minute, "the migration's first try to time out",
		func() bool { return waitersOnWorkers(t, check) == 0 })
	pgtest.Eventually(t, time.Minute, "the migration's second try to wait",
		func() bool { return waitersOnWorkers(t, check) > 0 })
	cancel()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("migrate went on waiting after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error does not wrap context.Canceled: %v", err)
	}
	if want := fmt.Sprintf("a lock on pgbus.workers held by pid %d", pid); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error lacks %q: %v", want, err)
	}
	if recorded, column := workersMigrated(t, check); recorded || column {
		t.Fatalf("after the cancel: migration 18 recorded %v, its column added %v; want neither", recorded, column)
	}
}

// Another process migrating holds the migration lock; Migrate waits for
// it, but not forever, and then names that process.
func TestMigrationWaitsForAnotherMigratorBoundedly(t *testing.T) {
	// The watch that names the holder looks every quarter of the lock
	// wait from a connection of its own, which it first has to open: on a
	// loaded machine a one-second turn ended before it had looked.
	store.SetMigrationLockWaits(t, time.Second, 50*time.Millisecond, 600*time.Millisecond, 5*time.Second)
	url, all, check := workersMigrationPending(t)
	s, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	other, pid := holdInTx(t, url, "other-migrator", `SELECT pg_advisory_xact_lock($1)`, store.MigrationLockKey)

	ctx, cancel := context.WithTimeout(testContext(t), 20*time.Second)
	defer cancel()
	_, err = s.Migrate(ctx)
	if err == nil {
		t.Fatal("migrate succeeded while another process held the migration lock")
	}
	if ctx.Err() != nil {
		t.Fatalf("migrate waited until its context ended: %v", err)
	}
	for _, want := range []string{
		fmt.Sprintf("another process, pid %d (idle in transaction", pid),
		`application "other-migrator"`,
		"has held the migration lock for over 5s",
		"nothing of it was applied",
		"let it finish and migrate again",
		fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if recorded, column := workersMigrated(t, check); recorded || column {
		t.Fatalf("after giving up: migration 18 recorded %v, its column added %v; want neither", recorded, column)
	}
	if err := other.Commit(testContext(t)); err != nil {
		t.Fatal(err)
	}
	st, err := s.Migrate(testContext(t))
	if err != nil || st.Applied != len(all)-17 {
		t.Fatalf("migrate once the other process finished = %+v, %v; want %d applied", st, err, len(all)-17)
	}
}

// Processes that migrate at once share the work: each applies what the
// others have not. The version one upgraded from is the one recorded when
// it read the record, not its final version less what it applied itself,
// which named a version the database never had before the upgrade.
func TestMigrateReportsTheVersionItUpgradedFrom(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url, s := newMigratedDatabase(t)
	n := len(all)
	pgtest.Exec(t, url, fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version >= %d`, n-1))
	// The rest was migrated the day before, by an earlier deploy: not a
	// first install under way (store.RunWindow).
	pgtest.Exec(t, url, `UPDATE pgbus.schema_migrations SET applied_at = now() - interval '1 day'`)
	// Another process applies the first of the two while this one is
	// between reading the record and applying.
	store.OnRecordRead(s, func() {
		pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, '%s')`, n-1, all[n-2].Name))
	})
	st, err := s.Migrate(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Applied != 1 || st.Version != n || st.From != n-2 {
		t.Fatalf("migrate from version %d, with another process applying %d meanwhile = applied %d, version %d, from %d; want 1 applied, version %d, from %d",
			n-2, n-1, st.Applied, st.Version, st.From, n, n-2)
	}
	// What it applied itself: from n-1, which the other applied, to n.
	if from, to, others, ok := st.Upgrade(); !ok || from != n-1 || to != n || !slices.Equal(others, []int{n - 1}) || !slices.Equal(st.AppliedVersions, []int{n}) {
		t.Fatalf("upgrade = from %d to %d, by others %v, %v (applied %v); want from %d to %d, by others [%d], applied [%d]",
			from, to, others, ok, st.AppliedVersions, n-1, n, n-1, n)
	}
}

// An index of the audit log built beforehand with CREATE INDEX
// CONCURRENTLY, as the upgrade note suggests, is left invalid when the build
// fails or is cancelled: the planner never uses it. The migration that
// builds the audit log's indexes replaces an invalid one rather than keep
// it.
func TestMigrationRebuildsAnInvalidAuditIndex(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, all := storeAtVersion(t, 28)
	if m := all[28]; !strings.Contains(m.SQL, "audit_log_client_id_idx") {
		t.Fatalf("migration 29 (%s) no longer builds audit_log_client_id_idx: pick the migration that does", m.Name)
	}
	for _, sql := range []string{
		`CREATE INDEX CONCURRENTLY audit_log_client_id_idx ON pgbus.audit_log (client, id)`,
		`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'pgbus.audit_log_client_id_idx'::regclass`,
	} {
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"audit_log_client_id_idx", "audit_log_tool_id_idx"} {
		var valid bool
		if err := s.Pool().QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('pgbus.' || $1)`, name).Scan(&valid); err != nil {
			t.Fatalf("index %s after the migration: %v", name, err)
		}
		if !valid {
			t.Fatalf("index %s is still invalid after the migration; want it rebuilt", name)
		}
	}
}
