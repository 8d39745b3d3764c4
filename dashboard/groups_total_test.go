package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// More groups than the page lists: its count of dead messages is that of
// the groups listed, and it says so, not that they are all the groups',
// and how many the others hold.
func TestGroupsPageCountsWhatItLists(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_wide")
	specs := make([]pgtest.DeadSpec, store.MaxDeadGroups+3)
	for i := range specs {
		specs[i] = pgtest.DeadSpec{Kind: "k", Class: fmt.Sprintf("E%04d", i), Message: "boom"}
	}
	pgtest.DeadLetter(t, st, q, specs...)
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq")
	want := fmt.Sprintf("%d dead messages in the %d largest of %d groups by cause", store.MaxDeadGroups, store.MaxDeadGroups, store.MaxDeadGroups+3)
	if code != http.StatusOK || !strings.Contains(strings.ReplaceAll(page, ",", ""), want) {
		t.Fatalf("GET /dlq of %d groups: %d; want it to say %q\n%.3000s", store.MaxDeadGroups+3, code, want, page)
	}
	if left := "the other 3 groups hold 3 of the 503 dead messages"; !strings.Contains(strings.ReplaceAll(page, ",", ""), left) {
		t.Errorf("GET /dlq of %d groups: want it to say what the groups left out hold, %q\n%.3000s", store.MaxDeadGroups+3, left, page)
	}
}
