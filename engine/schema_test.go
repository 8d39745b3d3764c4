package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

// A program built with this pgbus, deployed before anyone migrated the
// database an older pgbus migrated, is stopped by Run before any worker
// starts, told the versions and to migrate: Run failed on a column the
// older schema lacks, in an error that said neither.
func TestRunRefusesASchemaAnOlderPgbusMigrated(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := pgtest.NewFastQueue(t, s, "old", nil)
	// The state the latest migration's predecessor leaves: its record
	// missing, and 0018's column with it (0018 is the latest as this is
	// written; later migrations leave the column and the check the same).
	pgtest.Exec(t, url, fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version = %d;
		ALTER TABLE pgbus.workers DROP COLUMN heartbeat_interval_ms`, len(all)))
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	err = c.Run(testContext(t))
	want := fmt.Sprintf("schema version %d, this pgbus needs %d", len(all)-1, len(all))
	if !errors.Is(err, store.ErrSchemaOld) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Store.Migrate") || strings.Contains(err.Error(), "pgbus migrate") {
		t.Fatalf("Run on a schema an older pgbus migrated: %v; want ErrSchemaOld with %q, saying to call Store.Migrate", err, want)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.workers`); n != 0 {
		t.Fatalf("Run registered %d worker processes before refusing", n)
	}
}

// A program built with an older pgbus, on a database a newer one migrated,
// runs its workers and its log says once (however many clients run on its
// store), with both versions, that this pgbus is older than the database
// and to upgrade it: a Go program that opens its store itself was told
// nothing, where the command line warned.
func TestRunWarnsOnceOfASchemaANewerPgbusMigrated(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := pgtest.NewFastQueue(t, s, "newer", nil)
	pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus')`, len(all)+1))
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	// A second client on the same store, as a process that checked the
	// schema itself on start and then runs workers: told no more.
	again := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	again.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, again)
	pgtest.Eventually(t, time.Minute, "both worker processes registered", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.workers WHERE stopped_at IS NULL`) == 2
	})
	out := logs.String()
	if n := strings.Count(out, "a newer pgbus migrated this database"); n != 1 {
		t.Fatalf("two Runs on one store of a newer schema warned %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{"level=WARN", "keeps working on it", "upgrade this pgbus",
		fmt.Sprintf("schema_version=%d this_pgbus_schema_version=%d", len(all)+1, len(all))} {
		if !strings.Contains(out, want) {
			t.Errorf("Run on a newer schema logged no %q:\n%s", want, out)
		}
	}
}
