package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The retry preview of dead messages whose queue was dropped outside
// pgbus says they cannot move and why, with the step that mends it, where
// it said that no dead message matched any more, all of them still there.
func TestRetryPreviewOfADroppedQueue(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_gone")
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	pgtest.DropOutside(t, st, q)
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq/retry?queue=" + q)
	if code != http.StatusOK || strings.Contains(page, "no dead message matches") || !strings.Contains(page, "3 dead messages match") ||
		!strings.Contains(page, "queue &#34;"+q+"&#34; no longer exists") || !strings.Contains(page, "pgbus queue create "+q) {
		t.Fatalf("the retry preview of a dropped queue's dead messages: %d\n%s", code, page)
	}
}
