package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
)

// The overview of an older pgbus's dashboard, on a database a newer pgbus
// migrated, keeps the verdict OK and lists the NOTICE that says so, with
// both versions and to upgrade: it said OK and that nothing was wrong.
func TestOverviewNoticesASchemaANewerPgbusMigrated(t *testing.T) {
	t.Parallel()
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus')`, len(all)+1))
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/")
	if code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", code, page)
	}
	want := fmt.Sprintf(`<span class="badge badge-notice">NOTICE</span> a newer pgbus migrated this database to schema version %d; this pgbus has versions up to %d`, len(all)+1, len(all))
	if !strings.Contains(page, `class="health health-ok"`) || !strings.Contains(page, want) || !strings.Contains(page, "upgrade this pgbus") {
		t.Fatalf("the overview on a newer schema:\n%s\nwant the verdict OK and %q, saying to upgrade", page, want)
	}
}
