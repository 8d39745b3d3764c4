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
// again, and to reload in a moment. It is a passing state of the server,
// as one restarting is: 503, as the live counts answer, not 500.
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
	for _, want := range []string{"too many connections for role", "Reload this page in a moment", `href="/">Says whether the database answers again</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("GET /dlq while the database refuses connections: %d, page lacks %q:\n%s", code, want, page)
		}
	}
	if code != http.StatusServiceUnavailable {
		t.Errorf("GET /dlq while the database refuses connections: %d, want 503", code)
	}
	if code, body, _ := b.get("/live"); code != http.StatusServiceUnavailable {
		t.Errorf("GET /live while the database refuses connections: %d %.300s, want 503", code, body)
	}
}
