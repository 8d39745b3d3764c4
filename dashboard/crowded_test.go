package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// While the database refuses pgbus's connections, having as many as it
// allows, a page says so and links the next step the operations layer
// gives: the health check, the overview, which says when it takes one
// again; with no other step, it still says to reload in a moment.
func TestPagesWhileTheDatabaseRefusesConnections(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "ALTER ROLE "+role+" CONNECTION LIMIT 0")
	pool, err := pgxpool.New(pgtest.Context(t), roleURL) // connects on first use
	if err != nil {
		t.Fatal(err)
	}
	full := store.New(pool)
	t.Cleanup(full.Close)
	b := newBrowser(t, serve(t, full, serverOpts{}))

	code, page, _ := b.get("/dlq")
	for _, want := range []string{"too many connections for role", "reload this page in a moment", `href="/">Says whether the database answers again</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("GET /dlq while the database refuses connections: %d, page lacks %q:\n%s", code, want, page)
		}
	}
	if code != http.StatusInternalServerError {
		t.Errorf("GET /dlq while the database refuses connections: %d, want 500", code)
	}
}
