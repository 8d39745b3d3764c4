package tools_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// TestDatabaseTroubleAdvises: an agent whose server runs on a database
// that cannot serve it is told what to do, not only that the call failed:
// to migrate a database pgbus migrate never ran on, and to shrink the pool
// when the database has no connection to spare.
func TestDatabaseTroubleAdvises(t *testing.T) {
	ctx := testContext(t)
	bare, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bare.Close)
	text := newEnvOn(t, bare, ops.Options{}).callErr(t, "pgbus_dlq_list", nil,
		"no pgbus schema", "needs schema version", "see the CLI: pgbus migrate")
	if strings.Contains(text, "could not complete the call") {
		t.Errorf("the advice to migrate reads as a server fault: %s", text)
	}

	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "ALTER ROLE "+role+" CONNECTION LIMIT 0")
	pool, err := pgxpool.New(ctx, roleURL) // connects on first use
	if err != nil {
		t.Fatal(err)
	}
	full := store.New(pool)
	t.Cleanup(full.Close)
	newEnvOn(t, full, ops.Options{}).callErr(t, "pgbus_queue_stats", nil,
		"too many connections for role", "pool_max_conns", "PgBouncer", "try the call again")
}
