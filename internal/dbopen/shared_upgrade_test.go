package dbopen_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
)

// Processes that migrate at once share the work: each says in its log
// what it applied itself, from which version to which, and names the
// versions others applied meanwhile. Each said it upgraded the schema
// from the version it read before any of them applied anything to the
// newest, though another had applied most of it, so that their logs, and
// migrate's "(N applied now)", contradicted one another. A process that
// then finds nothing to apply claims no upgrade.
//
// Here an older pgbus, which knows migrations up to 24, migrates while
// this one waits for the migration lock, having read the record at 17:
// this one applies 25 to 30 alone.
func TestPrepareLogsOnlyWhatItApplied(t *testing.T) {
	ctx := pgtest.Context(t)
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	const start, older = 17, 24
	if len(all) <= older {
		t.Fatalf("%d migrations; the test needs more than %d", len(all), older)
	}
	url := pgtest.NewDatabase(t)
	setup := connect(t, url)
	if _, err := setup.Exec(ctx, `CREATE SCHEMA pgbus; CREATE TABLE pgbus.schema_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range all[:start] {
		if _, err := setup.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("migration %d: %v", m.Version, err)
		}
		if _, err := setup.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}

	// An older pgbus migrated it up to there the day before.
	if _, err := setup.Exec(ctx, `UPDATE pgbus.schema_migrations SET applied_at = now() - interval '1 day'`); err != nil {
		t.Fatal(err)
	}

	// Another process migrates: it holds the migration lock.
	first := connect(t, url)
	firstTx, err := first.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := firstTx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgtest.MigrationLockKey); err != nil {
		t.Fatal(err)
	}

	var logs pgtest.SyncBuffer
	db, err := dbopen.Connect(ctx, dbopen.Options{URL: url, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	prepared := make(chan error, 1)
	go func() { prepared <- db.Prepare(ctx, true) }()
	pgtest.Eventually(t, 30*time.Second, "pgbus to wait for the migration lock", func() bool { return lockWaiters(t, setup) == 1 })

	// The older pgbus queues for the lock behind it, and gets it once
	// pgbus has read the record, before pgbus applies anything.
	older24 := connect(t, url)
	olderDone := make(chan error, 1)
	go func() {
		olderDone <- pgx.BeginFunc(ctx, older24, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgtest.MigrationLockKey); err != nil {
				return err
			}
			for _, m := range all[start:older] {
				if _, err := tx.Exec(ctx, m.SQL); err != nil {
					return fmt.Errorf("migration %d: %w", m.Version, err)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	pgtest.Eventually(t, 30*time.Second, "the older pgbus to wait for the migration lock", func() bool { return lockWaiters(t, setup) == 2 })
	if err := firstTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-olderDone; err != nil {
		t.Fatalf("the older pgbus's migrations: %v", err)
	}
	if err := <-prepared; err != nil {
		t.Fatalf("prepare: %v", err)
	}

	var mine []int
	for v := older + 1; v <= len(all); v++ {
		mine = append(mine, v)
	}
	if st := db.Status; st.Applied != len(mine) || st.Version != len(all) || !slices.Equal(st.AppliedVersions, mine) {
		t.Fatalf("status = applied %d (versions %v), version %d; want %d applied (%v), version %d",
			st.Applied, st.AppliedVersions, st.Version, len(mine), mine, len(all))
	}
	got := logs.String()
	for _, want := range []string{
		"upgraded the database's pgbus schema",
		fmt.Sprintf("from_version=%d to_version=%d", older, len(all)),
		fmt.Sprintf("applied_versions=%d-%d", older+1, len(all)),
		fmt.Sprintf("applied_by_others=%d-%d", start+1, older),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the log of a migration that applied versions %d to %d lacks %q:\n%s", older+1, len(all), want, got)
		}
	}
	if strings.Contains(got, fmt.Sprintf("from_version=%d ", start)) {
		t.Errorf("the log claims the upgrade from %d, whose versions %d to %d another process applied:\n%s", start, start+1, older, got)
	}

	// Another process after it finds nothing to apply, and claims nothing.
	if again := migratedLogs(t, url); strings.Contains(again, "upgraded") {
		t.Errorf("a migration that applied nothing logged an upgrade:\n%s", again)
	}
}

// connect opens a connection of the test's own to url, closed when the
// test ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(pgtest.Context(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// lockWaiters counts the sessions of conn's database waiting for the
// migration lock.
func lockWaiters(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(pgtest.Context(t), `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND NOT granted AND (classid::int8 << 32 | objid::int8) = $1
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, pgtest.MigrationLockKey).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
