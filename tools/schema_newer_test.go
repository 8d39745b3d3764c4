package tools_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/schema"
)

// An agent asking an older pgbus's server for health, on a database a
// newer pgbus migrated, is told so in a NOTICE reason naming both versions
// and to upgrade, the verdict left OK: it was told OK and nothing else. A
// newer pgbus that migrates while the server runs (a rolling deploy) shows
// once health reads the version again, a minute after it last did.
func TestHealthNoticesASchemaANewerPgbusMigrated(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var elapsed atomic.Int64
	e := newEnvOn(t, st, ops.Options{Now: func() time.Time { return start.Add(time.Duration(elapsed.Load())) }})

	h := healthOK(t, e, nil)
	if h.Status != ops.HealthOK || len(h.Reasons) != 0 {
		t.Fatalf("health of a database this pgbus migrated: %+v; want OK with no reason", h)
	}

	pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus')`, len(all)+1))
	elapsed.Store(int64(time.Minute + time.Second))
	h = healthOK(t, e, nil)
	want := fmt.Sprintf("a newer pgbus migrated this database to schema version %d; this pgbus has versions up to %d", len(all)+1, len(all))
	if h.Status != ops.HealthOK || len(h.Reasons) != 1 {
		t.Fatalf("health after a newer pgbus migrated: %+v; want OK with one reason", h)
	}
	if r := h.Reasons[0]; r.Status != ops.HealthNotice || r.Code != "schema_newer" || r.Queue != "" ||
		!strings.Contains(r.Message, want) || !strings.Contains(r.Message, "upgrade this pgbus") {
		t.Fatalf("reason %+v; want NOTICE schema_newer saying %q and to upgrade this pgbus", r, want)
	}

	// A server started after the migration says so at its first call.
	fresh := newEnvOn(t, st, ops.Options{})
	if h := healthOK(t, fresh, nil); len(h.Reasons) != 1 || h.Reasons[0].Code != "schema_newer" {
		t.Fatalf("health of a new server on a newer schema: %+v; want the schema_newer reason", h)
	}
}
