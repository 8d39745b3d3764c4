package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// On a database an older pgbus migrated, a page that needs what it lacks
// says so and shows the command that migrates it, in a form to copy, with
// the command that says more, and where to run it.
func TestPageOfAnOldSchemaShowsTheMigrateCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	b := newBrowser(t, serve(t, st, serverOpts{}))
	pgtest.Exec(t, url, `ALTER TABLE pgbus.workers DROP COLUMN heartbeat_interval_ms;
		DELETE FROM pgbus.schema_migrations WHERE version >= 18`)
	code, page, _ := b.get("/workers")
	if code != http.StatusInternalServerError || !strings.Contains(page, "pgbus schema version 17, this pgbus needs") || strings.Contains(page, "down or restarting") {
		t.Fatalf("GET /workers on an old schema: %d, want 500 naming the versions, and not a database down\n%s", code, page)
	}
	for _, want := range []string{
		`Applies the schema migrations this pgbus needs: <code class="cmd">pgbus migrate</code>`,
		`<code class="cmd">pgbus migrate --help</code> says more`,
		`with the database settings this server uses (<code>--database-url</code> or <code>DATABASE_URL</code>)`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %s:\n%s", want, page)
		}
	}
}
