package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
	if !errors.Is(err, store.ErrSchemaOld) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Store.Migrate") {
		t.Fatalf("Run on a schema an older pgbus migrated: %v; want ErrSchemaOld with %q, saying to call Store.Migrate", err, want)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.workers`); n != 0 {
		t.Fatalf("Run registered %d worker processes before refusing", n)
	}
}
