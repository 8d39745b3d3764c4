package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A message id in a page's URL or a form has one spelling, the one the
// dead-letter list links with: +42, 042, " 42" and the like are refused,
// saying the form expected, rather than read as message 42; nothing moves.
func TestMessageIDsHaveOneSpelling(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_id")
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	dlq, id := q+"_dlq", fmt.Sprint(ids[0])
	b := newBrowser(t, serve(t, st, serverOpts{}))
	show := func(id string) string { return "/dlq/message?" + url.Values{"queue": {dlq}, "id": {id}}.Encode() }
	code, page, _ := b.get(show(id))
	if code != http.StatusOK {
		t.Fatalf("the message's page: %d\n%s", code, page)
	}
	token := csrf(t, page)
	refused := func(what string, code int, page string) {
		t.Helper()
		if code != http.StatusBadRequest || !strings.Contains(html.UnescapeString(page), ops.IDForm) {
			t.Errorf("%s: %d; want 400 saying the form expected (%s):\n%s", what, code, ops.IDForm, page)
		}
	}
	for _, bad := range []string{"+" + id, "0" + id, " " + id, id + " ", id + ".0", id[:1] + "_" + id[1:]} {
		code, page, _ := b.get(show(bad))
		refused("GET "+show(bad), code, page)
		for _, action := range []string{"/dlq/message/retry", "/dlq/message/discard", "/dlq/message/correct"} {
			code, page, _ := b.post(action, url.Values{"csrf": {token}, "queue": {dlq}, "id": {bad}, "payload": {`{}`}}, nil)
			refused("POST "+action+" id="+bad, code, page)
		}
		query := url.Values{"verb": {"retry"}, "queue": {dlq}, "id": {bad}}
		code, page, _ = b.get("/dlq/selected?" + query.Encode())
		refused("GET /dlq/selected?"+query.Encode(), code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("%d messages dead after calls that should all have been refused; want 1", n)
	}
}
