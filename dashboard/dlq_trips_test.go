package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The list of dead messages says of one retried out of a DLQ before how
// often, under its attempts; one that died once says nothing more.
func TestDeadListShowsRetriesFromDLQ(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_trips")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "once"},
		pgtest.DeadSpec{Kind: "thrice", Headers: `{"pgbus_kind": "thrice", "pgbus_dlq_retries": 2}`})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq/messages?queue=" + q)
	if code != http.StatusOK {
		t.Fatalf("GET /dlq/messages: %d\n%s", code, page)
	}
	rows := strings.Split(page, "<tr>")
	var once, thrice string
	for _, r := range rows {
		switch {
		case strings.Contains(r, "<td>once</td>"):
			once = r
		case strings.Contains(r, "<td>thrice</td>"):
			thrice = r
		}
	}
	if !strings.Contains(thrice, "after 2 DLQ retries") || once == "" || strings.Contains(once, "DLQ retr") {
		t.Errorf("rows of the list:\nonce: %s\nthrice: %s\nwant the second retry said of thrice only", once, thrice)
	}
}

// A group of the dead-letter page whose newest message came back from a
// DLQ before says so; a group that died once does not.
func TestDeadGroupsShowComebacks(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_back")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "once", Class: "Once"},
		pgtest.DeadSpec{Kind: "thrice", Class: "Thrice", Headers: `{"pgbus_kind": "thrice", "pgbus_dlq_retries": 2}`})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq?queue=" + q)
	if code != http.StatusOK {
		t.Fatalf("GET /dlq: %d\n%s", code, page)
	}
	var once, thrice string
	for _, g := range strings.Split(page, `<li class="group">`) {
		switch {
		case strings.Contains(g, "Once</a></h2>"):
			once = g
		case strings.Contains(g, "Thrice</a></h2>"):
			thrice = g
		}
	}
	if !strings.Contains(thrice, "died again after 2 DLQ retries") || once == "" || strings.Contains(once, "Came back") {
		t.Errorf("groups:\nonce: %s\nthrice: %s\nwant the comeback said of thrice only", once, thrice)
	}
}
