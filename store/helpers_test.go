package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testStore returns a store with a pool of its own (pgtest.OwnStore) on the
// migrated test database; tests keep apart by using queues of their own
// (newQueue).
func testStore(t testing.TB) *store.Store { return pgtest.OwnStore(t) }

// newQueue creates a queue with a unique name and drops it after the test.
func newQueue(t testing.TB, s *store.Store) string {
	t.Helper()
	return pgtest.NewQueue(t, s, "q")
}

func uniqueName(prefix string) string { return pgtest.Name(prefix) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

// storeAtVersion opens a fresh database migrated only up to version, as
// an older pgbus left it, and returns every migration for the rest.
func storeAtVersion(t *testing.T, version int) (*store.Store, []schema.Migration) {
	t.Helper()
	url, all := databaseAtVersion(t, version)
	s, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, all
}

// databaseAtVersion creates a fresh database migrated only up to version,
// as an older pgbus left it, and returns its URL and every migration.
func databaseAtVersion(t *testing.T, version int) (string, []schema.Migration) {
	t.Helper()
	return migratedUpTo(t, pgtest.NewDatabase(t), version)
}

// migratedUpTo migrates the empty database of url only up to version, as
// databaseAtVersion does, and returns url and every migration.
func migratedUpTo(t *testing.T, url string, version int) (string, []schema.Migration) {
	t.Helper()
	ctx := testContext(t)
	conn := connect(t, url, "")
	all, err := schema.All()
	if err != nil || len(all) <= version {
		t.Fatalf("migrations: %d, %v", len(all), err)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA pgbus; CREATE TABLE pgbus.schema_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range all[:version] {
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("migration %d: %v", m.Version, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	return url, all
}

// connect opens a connection of the test's own to url, with application
// name app if given, closed when the test ends.
func connect(t *testing.T, url, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if app != "" {
		cfg.RuntimeParams["application_name"] = app
	}
	conn, err := pgx.ConnectConfig(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// retryUnderWay begins a transaction that does to message id of queue q
// what a worker's RetryMany does, its row updated and a failure written,
// and returns the transaction's backend pid and its commit; it is rolled
// back at the end of the test if not committed.
func retryUnderWay(t *testing.T, s *store.Store, q string, id int64) (pid int, commit func()) {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE `+pgx.Identifier{"pgmq", "q_" + q}.Sanitize()+` SET vt = now() WHERE msg_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message) VALUES ($1, $2, 9, 'E', 'failed again')`, q, id); err != nil {
		t.Fatal(err)
	}
	return pid, func() {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// blocks reports whether backend pid blocks another whose query starts
// with prefix.
func blocks(t *testing.T, s *store.Store, pid int, prefix string) bool {
	t.Helper()
	var waiting bool
	err := s.Pool().QueryRow(testContext(t), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND starts_with(query, $2))`, pid, prefix).Scan(&waiting)
	return err == nil && waiting
}

// waitsForARowOf reports whether another session waits for a row that
// backend pid holds (not for a table lock).
func waitsForARowOf(t *testing.T, s *store.Store, pid int) bool {
	t.Helper()
	var waiting bool
	err := s.Pool().QueryRow(testContext(t), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		WHERE $1 = ANY(pg_blocking_pids(pid)) AND wait_event IN ('transactionid', 'tuple'))`, pid).Scan(&waiting)
	return err == nil && waiting
}
