package dbopen_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
)

// A process of an older pgbus, on a database a newer one migrated, starts
// (whether its command migrates or only checks) and warns that it is
// older than the database, with both versions, and to upgrade it: it
// said nothing, and its migrate reported the newer version as its own.
func TestPrepareWarnsOfANewerSchema(t *testing.T) {
	ctx := pgtest.Context(t)
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url) // migrated
	pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus')`, len(all)+1))

	for _, migrate := range []bool{false, true} {
		var logs pgtest.SyncBuffer
		db, err := dbopen.Connect(ctx, dbopen.Options{URL: url, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		err = db.Prepare(ctx, migrate)
		db.Close()
		if err != nil {
			t.Fatalf("prepare (migrate %v) on a newer schema: %v", migrate, err)
		}
		for _, want := range []string{"level=WARN", "a newer pgbus migrated this database", "keeps working on it", "upgrade this pgbus",
			fmt.Sprintf("schema_version=%d this_pgbus_schema_version=%d", len(all)+1, len(all))} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("prepare (migrate %v) on a newer schema logged no %q:\n%s", migrate, want, logs.String())
			}
		}
	}
}

// A process that migrates on start (work, serve) says when it upgraded a
// schema an older pgbus migrated, from which version to which: in a
// rolling deploy that is the moment the old processes start running on a
// newer schema. A first install, and a start with nothing to apply, say
// nothing of it.
func TestPrepareSaysItUpgradedTheSchema(t *testing.T) {
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	prepare := func() string { return migratedLogs(t, url) }
	if logs := prepare(); strings.Contains(logs, "upgraded") {
		t.Errorf("the first install logged an upgrade:\n%s", logs)
	}
	// The last migration undone in the record only: it restates what it
	// makes, so applying it again is an upgrade from the version before.
	pgtest.Exec(t, url, fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version = %d`, len(all)))
	// Migrated the day before: the versions of a first install under way
	// are those applied within store.RunWindow.
	pgtest.Exec(t, url, `UPDATE pgbus.schema_migrations SET applied_at = now() - interval '1 day'`)
	logs := prepare()
	if want := fmt.Sprintf("from_version=%d to_version=%d", len(all)-1, len(all)); !strings.Contains(logs, "upgraded the database's pgbus schema") || !strings.Contains(logs, want) {
		t.Errorf("the upgrade logged:\n%s\nwant it said, %s", logs, want)
	}
	if logs := prepare(); strings.Contains(logs, "upgraded") {
		t.Errorf("a start with nothing to apply logged an upgrade:\n%s", logs)
	}
}
