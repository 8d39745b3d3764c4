package dashboard_test

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The navigation marks its section's own page as the current page
// (aria-current="page"), and the section of a page below it as the
// current section (aria-current="true"): a queue's page is not the
// overview, nor a dead message's the dead letters' page.
func TestBrowserNavCurrent(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_current")
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	base := "http://" + serve(t, st, serverOpts{})
	for _, c := range []struct{ path, name, want string }{
		{"/", "overview", "Overview=page"},
		{"/queues/" + q, "queue", "Overview=true"},
		{"/dlq", "groups", "Dead letters=page"},
		{"/dlq?queue=" + q, "groups", "Dead letters=page"},
		{"/dlq/messages?queue=" + q, "list", "Dead letters=true"},
		{pageURLOf("/dlq/message", "queue", q+"_dlq", "id", strconv.FormatInt(ids[0], 10)), "message", "Dead letters=true"},
		{"/audit", "audit", "Audit=page"},
		{"/circuits", "circuits", "Circuits=page"},
	} {
		b.do("open "+c.path, chromedp.Navigate(base+c.path), page(c.name))
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("header nav a[aria-current]"), a => a.textContent + "=" + a.getAttribute("aria-current")).join(" ")`))
		if err != nil || got != c.want {
			t.Errorf("on %s the navigation marks %q (%v), want %q", c.path, got, err, c.want)
		}
	}
}
