package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A query with a malformed escape is refused, not read as far as it goes:
// read so, it dropped the filter it broke, and a discard's preview covered
// every dead message of the queue where its link named one kind. A form
// that is no form, or has more fields than can be read, is refused as
// such, not as a form without a CSRF token. Nothing moves either way.
func TestUnreadableRequestsAreRefused(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_bad")
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "normal", Class: "E", Message: "boom"})
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "other", Class: "E", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	if code, page, _ := b.get("/dlq/discard?queue=" + q + "&kind=normal"); code != http.StatusOK || !strings.Contains(page, "2 dead messages") {
		t.Fatalf("the preview of kind normal: %d\n%s", code, page)
	}
	for _, target := range []string{"/dlq/discard?queue=" + q + "&kind=normal%ZZ", "/dlq/discard?kind=normal&queue=" + q + "%", "/dlq?queue=a%ZZ"} {
		code, page, _ := b.get(target)
		if code != http.StatusBadRequest || !strings.Contains(page, "query cannot be read") || strings.Contains(page, "5 dead messages") {
			t.Errorf("GET %s: %d; want 400 saying the query cannot be read\n%s", target, code, page)
		}
	}
	_, page, _ := b.get("/dlq?queue=" + q)
	token := csrf(t, page)
	json := http.Header{"Content-Type": {"application/json"}}
	if code, page, _ := b.do(http.MethodPost, "/dlq/discard", url.Values{"csrf": {token}, "queue": {q}, "confirm": {"1"}}, json); code != http.StatusBadRequest || !strings.Contains(page, "take a form") {
		t.Errorf("a JSON body: %d; want 400 saying actions take a form\n%s", code, page)
	}
	many := url.Values{"csrf": {token}, "queue": {q}, "action": {"discard"}}
	for range 12_000 {
		many.Add("id", "1")
	}
	if code, page, _ := b.post("/dlq/selected", many, nil); code != http.StatusBadRequest || !strings.Contains(page, "form cannot be read") {
		t.Errorf("a form of 12,000 fields: %d; want 400 saying it cannot be read\n%.2000s", code, page)
	}
	// Nor does the assets' directory list them.
	if code, page, _ := b.get("/static/"); code != http.StatusNotFound || strings.Contains(page, "style.css") {
		t.Errorf("GET /static/: %d; want 404, no listing\n%s", code, page)
	}
	if code, _, _ := b.get("/static/style.css"); code != http.StatusOK {
		t.Errorf("GET /static/style.css: %d", code)
	}
	if n := pgtest.Live(t, st, q+"_dlq"); n != 5 {
		t.Fatalf("%d dead messages left of 5", n)
	}
}
