package dbopen_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
)

// Processes started at once on a database without the schema share its
// first install: one that came a moment after another had applied the
// first migrations logged that it upgraded the schema from the version it
// found (from_version=3), to the last version it applied itself, though
// there had been no schema before and the others applied the rest. A
// first install logs no upgrade, whichever process applied what of it.
func TestFirstInstallSharedLogsNoUpgrade(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("joined after another applied the first migrations", func(t *testing.T) {
		t.Parallel()
		url := pgtest.NewDatabase(t)
		setup := connect(t, url)
		ctx := pgtest.Context(t)
		if _, err := setup.Exec(ctx, `CREATE SCHEMA pgbus; CREATE TABLE pgbus.schema_migrations (
			version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			t.Fatal(err)
		}
		for _, m := range all[:3] {
			if _, err := setup.Exec(ctx, m.SQL); err != nil {
				t.Fatalf("migration %d: %v", m.Version, err)
			}
			if _, err := setup.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				t.Fatal(err)
			}
		}
		if logs := migratedLogs(t, url); strings.Contains(logs, "upgraded") {
			t.Errorf("a process that took part in a first install logged an upgrade:\n%s", logs)
		}
	})
	t.Run("three at once", func(t *testing.T) {
		t.Parallel()
		url := pgtest.NewDatabase(t)
		var wg sync.WaitGroup
		logs := make([]string, 3)
		for i := range logs {
			wg.Go(func() { logs[i] = migratedLogs(t, url) })
		}
		wg.Wait()
		for i, l := range logs {
			if strings.Contains(l, "upgraded") {
				t.Errorf("process %d of a first install logged an upgrade:\n%s", i, l)
			}
		}
	})
}
