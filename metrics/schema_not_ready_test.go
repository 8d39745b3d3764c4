package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A process whose database answers, with no pgbus schema that its role
// may migrate (pgbus serve holds its calls meanwhile, ops.Gate), reported
// pgbus_database_up 0, and PgbusDatabaseUnreachable sent the on-call to a
// server that runs: a question of the locks on pgbus's tables failed for
// want of the schema. The database is up; the schema not being ready is
// pgbus_schema_ready 0, and 1 once it is.
func TestDatabaseUpWhileTheSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	st, err := store.Open(pgtest.Context(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	_, checked := st.CheckSchema(pgtest.Context(t))
	if checked == nil {
		t.Fatal("the schema check of an empty database passed")
	}
	gate := ops.NewGate()
	gate.Hold(checked)
	svc, err := ops.New(st, ops.Options{Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	base := serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))
	fams := scrape(t, base)
	if up, ready := value(fams, "pgbus_database_up", nil), value(fams, "pgbus_schema_ready", nil); up != 1 || ready != 0 {
		t.Errorf("with the database up and no schema: pgbus_database_up %v, pgbus_schema_ready %v; want 1 and 0", up, ready)
	}
	if _, err := st.Migrate(pgtest.Context(t)); err != nil {
		t.Fatal(err)
	}
	gate.Open()
	fams = scrape(t, base)
	if up, ready := value(fams, "pgbus_database_up", nil), value(fams, "pgbus_schema_ready", nil); up != 1 || ready != 1 {
		t.Errorf("once migrated: pgbus_database_up %v, pgbus_schema_ready %v; want 1 and 1", up, ready)
	}
}
