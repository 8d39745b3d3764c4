package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A dead-letter page asked with a filter it cannot read links back to
// the same page without that filter, the others kept, before the
// overview.
func TestBadFilterLinksBackWithoutIt(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_backlink")
	pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	for _, p := range []string{"/dlq", "/dlq/messages"} {
		code, page, _ := b.get(p + "?queue=" + q + "_dlq&since=yesterdayish")
		want := `href="` + p + `?queue=` + q + `_dlq"`
		if code != http.StatusBadRequest || !strings.Contains(page, want) {
			t.Errorf("GET %s with a since it cannot read: %d, want 400 linking %s:\n%s", p, code, want, page)
		}
		if i, j := strings.Index(page, want), strings.Index(page, `>Back to the overview<`); i < 0 || j < i {
			t.Errorf("GET %s with a since it cannot read: the link back to the page does not come before the overview's:\n%s", p, page)
		}
	}
}

// A form posted once its session ended links to the login page, which
// then leads back to the page the form came from; a Referer of another
// site, or outside the dashboard, is not linked.
func TestSessionEndedLinksToLoginAndBack(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_ended")
	token := newToken(t)
	addr := serve(t, st, serverOpts{token: token, basePath: "/ops"})
	_, port, _ := strings.Cut(addr, ":")
	ended := func(referer string) http.Header {
		h := http.Header{"Cookie": {"pgbus_session_" + port + "=AAAA.BBBB"}}
		if referer != "" {
			h.Set("Referer", referer)
		}
		return h
	}
	form := url.Values{"queue": {q}}
	from := "/queues/" + q
	code, page, _ := newBrowserUnder(t, addr, "/ops").post("/queues/pause", form, ended("http://"+addr+"/ops"+from))
	want := `href="/ops/login?next=` + url.QueryEscape(from) + `"`
	if code != http.StatusUnauthorized || !strings.Contains(page, "Your session ended") || !strings.Contains(strings.ReplaceAll(page, "&amp;", "&"), want) {
		t.Errorf("a form posted once its session ended: %d, want 401 linking %s:\n%s", code, want, page)
	}
	for _, foreign := range []string{"http://evil.test/ops" + from, "http://" + addr + "/elsewhere", "http://" + addr + "/ops/login?next=/x", "not a url"} {
		_, page, _ := newBrowserUnder(t, addr, "/ops").post("/queues/pause", form, ended(foreign))
		if page = strings.ReplaceAll(page, "&amp;", "&"); !strings.Contains(page, `href="/ops/login?next=%2F"`) || strings.Contains(page, "evil.test") || strings.Contains(page, "elsewhere") {
			t.Errorf("a form posted once its session ended, from %s: want a link to the login page leading to the overview only:\n%s", foreign, page)
		}
	}
}
