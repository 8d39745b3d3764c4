//go:build linux || darwin

package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// While the database is stopped, the dashboard's pages answer 503 with a
// page that says the database does not answer and to reload in a moment,
// the log saying so once a minute rather than at every request; once the
// database is back the same server shows its pages again.
func TestPagesWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	pgtest.CreateQueue(t, st, "outage")
	var logs pgtest.SyncBuffer
	b := newBrowser(t, serve(t, st, serverOpts{logs: &logs}))

	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/dlq", "/workers"} {
		code, page, _ := b.get(path)
		if code != http.StatusServiceUnavailable || !strings.Contains(page, "the database does not answer") || !strings.Contains(page, "Reload this page in a moment") {
			t.Errorf("GET %s while the database is stopped: %d, want 503 saying the database does not answer and to reload:\n%s", path, code, page)
		}
		_, next, _ := strings.Cut(page, `<ul class="next">`)
		next, _, _ = strings.Cut(next, "</ul>")
		if n := strings.Count(next, `href="/"`); n != 1 {
			t.Errorf("GET %s while the database is stopped: the next steps link the overview %d times, want once:\n%s", path, n, next)
		}
	}
	// The overview's script asks for its counts every few seconds.
	if code, body, _ := b.get("/live"); code != http.StatusServiceUnavailable || !strings.Contains(body, "the database does not answer") {
		t.Errorf("GET /live while the database is stopped: %d %s, want 503 saying the database does not answer", code, body)
	}

	// Told to the log once, not at every page and count.
	if n := strings.Count(logs.String(), "the database is unavailable"); n != 1 {
		t.Errorf("the outage met by four requests was logged %d times, want once:\n%s", n, logs.String())
	}

	pgtest.StartCluster(t, dir)
	if code, page, _ := b.get("/"); code != http.StatusOK || !strings.Contains(page, "outage") {
		t.Errorf("GET / once the database is back: %d, want the overview listing the queue:\n%s", code, page)
	}
}
