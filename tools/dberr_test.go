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
// when the database has no connection to spare, then to see when it takes
// one with pgbus_health.
func TestDatabaseTroubleAdvises(t *testing.T) {
	t.Parallel()
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
	crowded := newEnvOn(t, full, ops.Options{})
	crowded.callErr(t, "pgbus_queue_stats", nil,
		"too many connections for role", "pool_max_conns", "PgBouncer", "try the call again", "see pgbus_health")
	// Refused a connection, the call may succeed once the database takes
	// one again, which pgbus_health says.
	if m := crowded.metaOf(t, "pgbus_queue_stats", nil); m.Kind != ops.KindUnavailable || !hasCall(m.Next, "pgbus_health", map[string]any{}) {
		t.Errorf("a database refusing connections: %+v, want kind unavailable and pgbus_health next", m)
	}
}
