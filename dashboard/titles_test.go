package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// Each page's title names what it shows, so that a browser's tabs and
// history tell a preview from its result and one queue's pages from
// another's.
func TestPageTitlesNameWhatTheyShow(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_titles")
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	title := regexp.MustCompile(`<title>([^<]*)</title>`)
	for path, want := range map[string]string{
		"/dlq?queue=" + q:          "Dead letters of " + q + " · pgbus",
		"/dlq":                     "Dead letters · pgbus",
		"/dlq/messages?queue=" + q: "Dead messages of " + q + " · pgbus",
		fmt.Sprintf("/dlq/message?queue=%s&id=%d", q, ids[0]): fmt.Sprintf("Dead message %d in %s_dlq · pgbus", ids[0], q),
		"/dlq/retry?queue=" + q:                               "Preview: retry dead messages of " + q + " · pgbus",
		"/dlq/discard?queue=" + q:                             "Preview: discard dead messages of " + q + " · pgbus",
	} {
		code, page, _ := b.get(path)
		m := title.FindStringSubmatch(page)
		if code != http.StatusOK || m == nil || html.UnescapeString(m[1]) != want {
			t.Errorf("GET %s: %d, title %q; want %q", path, code, m, want)
		}
	}
}
