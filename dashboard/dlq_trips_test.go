package dashboard_test

import (
	"fmt"
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
	once, thrice := pieceWith(page, "<tr>", `<td class="kind">once</td>`), pieceWith(page, "<tr>", `<td class="kind">thrice</td>`)
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
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "once", Class: "Once"},
		pgtest.DeadSpec{Kind: "thrice", Class: "Thrice", Headers: `{"pgbus_kind": "thrice", "pgbus_dlq_retries": 2}`})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq?queue=" + q)
	if code != http.StatusOK {
		t.Fatalf("GET /dlq: %d\n%s", code, page)
	}
	once, thrice := pieceWith(page, `<li class="group">`, "Once</bdi></a></h2>"), pieceWith(page, `<li class="group">`, "Thrice</bdi></a></h2>")
	if !strings.Contains(thrice, "died again after 2 DLQ retries") || once == "" || strings.Contains(once, "Came back") {
		t.Errorf("groups:\nonce: %s\nthrice: %s\nwant the comeback said of thrice only", once, thrice)
	}
	// The preview of a retry, by filter or of selected ids, counts the
	// messages that came back.
	for _, path := range []string{"/dlq/retry?queue=" + q, fmt.Sprintf("/dlq/selected?verb=retry&queue=%s&id=%d&id=%d", q, ids[0], ids[1])} {
		if code, page, _ := b.get(path); code != http.StatusOK || !strings.Contains(page, "1 of these messages has been retried out of a DLQ before") {
			t.Errorf("GET %s: %d; want the message that came back counted\n%s", path, code, page)
		}
	}
}

// pieceWith is the piece of page, split at sep, that holds marker: one
// row of a table, one group of a list; "" when none does.
func pieceWith(page, sep, marker string) string {
	for _, p := range strings.Split(page, sep) {
		if strings.Contains(p, marker) {
			return p
		}
	}
	return ""
}
