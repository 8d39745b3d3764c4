package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The overview's 50 pause and resume buttons share the page's one form
// with the CSRF token (its logout form): the token is on the page once,
// not once a row. A button still sends that token, its queue and its
// action, as a form of its own did, without a script; and a button sent
// without the token is refused as before.
func TestBrowserOverviewButtonsShareOneToken(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st, _, _, paused := bigInstall(t)
	token := newToken(t)
	base := "http://" + serve(t, st, serverOpts{token: token})
	b.do("log in", chromedp.Navigate(base+"/login"), page("login"),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")), page("overview"))

	rows := b.rows()
	if len(rows) != 50 {
		t.Fatalf("the overview lists %d queues, want 50", len(rows))
	}
	b.tokenOnce()
	if n := b.count(`button[form="post"][name="queue"]`); n != 50 {
		t.Fatalf("the overview has %d pause or resume buttons naming the page's form, want one for each of its 50 queues", n)
	}
	q := rows[49] // a quiet queue, not paused
	button := `tr[data-queue="` + q + `"] button`
	label, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('`+button+`').textContent`))
	if err != nil || label != "Pause "+q {
		t.Fatalf("the button of %s reads %q (%v); want it to name its queue", q, label, err)
	}

	// Without the token the shared form holds, the button is refused.
	b.do("drop the page's token", chromedp.Evaluate[chromedp.Void](`document.querySelector('#post input[name="csrf"]').remove()`))
	if code := b.status("pause without the token", chromedp.Click(chromedp.CSS(button))); code != http.StatusForbidden {
		t.Fatalf("a pause without the CSRF token: status %d, want 403", code)
	}
	if pausedNow(t, st, q) {
		t.Fatalf("a pause without the CSRF token paused %s", q)
	}

	b.do("open the overview again", chromedp.Navigate(base+"/"), page("overview"))
	if code := b.status("pause "+q, chromedp.Click(chromedp.CSS(button))); code != http.StatusOK {
		t.Fatalf("pause %s: status %d", q, code)
	}
	if h := b.text("h1"); h != "Queue "+q+" paused" || !pausedNow(t, st, q) {
		t.Fatalf("pause %s: the page says %q", q, h)
	}
	b.do("open the overview again", chromedp.Navigate(base+"/"), page("overview"))
	if code := b.status("resume "+paused[0], chromedp.Click(chromedp.CSS(`tr[data-queue="`+paused[0]+`"] button`))); code != http.StatusOK {
		t.Fatalf("resume %s: status %d", paused[0], code)
	}
	if h := b.text("h1"); h != "Queue "+paused[0]+" resumed" || pausedNow(t, st, paused[0]) {
		t.Fatalf("resume %s: the page says %q", paused[0], h)
	}
}

// tokenOnce fails the test unless the page's CSRF token is in its HTML
// exactly once.
func (b tab) tokenOnce() {
	b.t.Helper()
	html, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		b.t.Fatalf("read the page: %v", err)
	}
	m := csrfRE.FindStringSubmatch(html)
	if m == nil {
		b.t.Fatalf("the page has no CSRF token:\n%s", html)
	}
	if n := strings.Count(html, m[1]); n != 1 {
		b.t.Fatalf("the page holds its CSRF token %d times in %d bytes, want once", n, len(html))
	}
}

// pausedNow says whether queue q is paused now.
func pausedNow(t *testing.T, st *store.Store, q string) bool {
	t.Helper()
	o, err := newService(t, st).Overview(pgtest.Context(t), ops.OverviewRequest{QueueNameContains: q})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range o.Queues {
		if s.Queue == q {
			return s.Paused
		}
	}
	t.Fatalf("the overview lists no queue %s", q)
	return false
}
