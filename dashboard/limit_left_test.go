package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The preview of a retry of a filter that selects more than one retry
// moves says how many more match.
func TestBulkPreviewSaysHowManyMoreMatch(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_left")
	if err := st.BulkLoadDead(pgtest.Context(t), q, 1002, 1); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq/retry?queue=" + q)
	if code != http.StatusOK || !strings.Contains(page, "and 2 more messages match this filter") {
		t.Fatalf("preview: %d\n%s", code, page)
	}
}
