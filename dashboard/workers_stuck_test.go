package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The workers page names, under a running process, the handlers it gave
// up on for ignoring their context that still run, their kinds escaped.
func TestWorkersPageNamesStuckHandlers(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	w := store.WorkerProcess{ID: "w-stuck", Hostname: "host-stuck", PID: 44, Queues: []string{"orders"}, Concurrency: 2, HeartbeatInterval: time.Hour,
		StuckCount: 1, StuckHandlers: []store.StuckHandler{{Queue: "orders", MsgID: 42, Kind: "<script>alert(1)</script>\u202e", GivenUpAt: time.Now()}}}
	if err := st.HeartbeatWorker(pgtest.Context(t), w); err != nil {
		t.Fatal(err)
	}
	page := workersPage(t, st)
	for _, want := range []string{"Handlers running past their timeout and grace", "message 42 of <code>orders</code>", "&lt;script&gt;alert(1)&lt;/script&gt;\\u202e"} {
		if !strings.Contains(page, want) {
			t.Errorf("the workers page lacks %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{"<script>alert", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("the workers page shows %q:\n%s", bad, page)
		}
	}
}

// workersPage is the workers page of a dashboard on st, logged in.
func workersPage(t *testing.T, st *store.Store) string {
	t.Helper()
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	code, page, _ := b.get("/workers")
	if code != http.StatusOK {
		t.Fatalf("GET /workers: %d\n%s", code, page)
	}
	return page
}
