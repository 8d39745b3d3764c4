package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Behind a reverse proxy that forwards /pgbus/ to pgbus serve --base-path
// /pgbus unchanged (as nginx's location /pgbus/ { proxy_pass
// http://127.0.0.1:8080; } does), a person logs in, opens the dead
// letters, follows the links to a dead message and retries it after its
// preview: every page
// stays under /pgbus/ on the proxy, its script and styles load under the
// Content-Security-Policy, and the message moves back to its queue.
func TestBrowserBehindProxyUnderBasePath(t *testing.T) {
	t.Parallel()
	const base = "/pgbus"
	// A step that waits for a page that never comes fails the test within
	// minutes rather than at the browser's own deadline.
	ctx, cancel := context.WithTimeout(chrome(t), 3*time.Minute)
	defer cancel()
	b := tab{t: t, ctx: ctx}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_proxy")
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "order.paid", Class: "Timeout", Message: "the bank did not answer"})
	token := newToken(t)
	target, err := url.Parse("http://" + serve(t, st, serverOpts{token: token, basePath: base}))
	if err != nil {
		t.Fatal(err)
	}
	// The proxy sends the upstream's host name, as nginx does by default,
	// and the path as it came.
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.SetXForwarded()
	}}
	mux := http.NewServeMux()
	mux.Handle(base+"/", proxy)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the proxy forwards only "+base+"/, not "+r.URL.Path, http.StatusBadGateway)
	})
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	site := front.URL + base

	b.do("open the dead letters through the proxy", chromedp.Navigate(site+"/dlq"), page("login"))
	if loc := b.location(); loc != site+"/login?next=%2Fdlq" {
		t.Fatalf("without the token %s/dlq went to %s, not the login page under the base path", site, loc)
	}
	b.do("log in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")), page("groups"))
	if loc := b.location(); loc != site+"/dlq" {
		t.Fatalf("after logging in the browser is at %s, want %s/dlq", loc, site)
	}
	// The styles loaded: the stylesheet under the base path went through
	// the proxy and the policy.
	if rules, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`[...document.styleSheets].reduce((n, s) => n + s.cssRules.length, 0)`)); err != nil || rules < 10 {
		t.Fatalf("the page's styles did not load through the proxy: %d rules (%v)", rules, err)
	}
	b.do("open the overview from the navigation", chromedp.Click(chromedp.CSS(`nav a[href="`+base+`/"]`)), page("overview"))
	b.do("go back to the dead letters", chromedp.Click(chromedp.CSS(`nav a[href="`+base+`/dlq"]`)), page("groups"))
	b.do("open the group", chromedp.Click(chromedp.CSS("li.group h2 a")), page("list"))
	b.do("open the message", chromedp.Click(chromedp.CSS("tbody th a")), page("message"))
	if loc, want := b.location(), fmt.Sprintf("%s/dlq/message?queue=%s_dlq&id=%d", site, q, ids[0]); loc != want {
		t.Fatalf("the message page is at %s, want %s", loc, want)
	}
	if code := b.status("preview its retry", chromedp.Click(chromedp.CSS(`form[action="`+base+`/dlq/selected"] button`))); code != http.StatusOK {
		t.Fatalf("the retry's preview: status %d", code)
	}
	b.do("see the preview", page("selected"))
	if code := b.status("retry it", chromedp.Click(chromedp.CSS(`form.confirm[action="`+base+`/dlq/selected"] button[type="submit"]`))); code != http.StatusOK {
		t.Fatalf("the retry: status %d", code)
	}
	b.do("see it done", page("selected"))
	if text := b.text("h1"); text != "Retried 1 message" {
		t.Fatalf("after the retry: %q", text)
	}
	if loc := b.location(); loc != site+"/dlq/selected" {
		t.Fatalf("the retry was sent to %s, not through the proxy under the base path", loc)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
		t.Fatalf("%d messages of %s are still dead after the retry", n, q)
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 1 {
		t.Fatalf("%s holds %d messages after the retry, want the one retried", q, n)
	}
}
