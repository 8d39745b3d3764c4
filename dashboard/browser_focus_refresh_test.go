package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A page refreshing itself does not reload while a link or a button has
// the keyboard's focus, which a reload sent back to the top of the page:
// it waits, and reloads once the focus has left them.
func TestBrowserRefreshWaitsForFocus(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_focus")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Message: "gateway timeout"})
	base := "http://" + serve(t, st, serverOpts{})
	for _, focused := range []string{`nav a[href="/audit"]`, `form.filters button[type="submit"]`} {
		b.do("open the dead letters, refreshing", chromedp.Navigate(base+"/dlq?refresh=5"), page("groups"),
			chromedp.Evaluate[chromedp.Void](`window.kept = "kept"`), chromedp.Focus(chromedp.CSS(focused)))
		if got := b.until("wait for the refresh", `document.querySelector("main[data-refresh-held]") ? "held" : (window.kept ? "" : "reloaded")`); got != "held" {
			t.Fatalf("the refresh came while %s had the focus: the page %s", focused, got)
		}
		if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.kept === "kept" && document.activeElement === document.querySelector(`+"`"+focused+"`"+`)`)); err != nil || !got {
			t.Fatalf("after the refresh was due, %s lost the focus or the page was reloaded (%v)", focused, err)
		}
		b.do("leave the focus", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
		if got := b.until("wait for the reload", `window.kept ? "" : "reloaded"`); got != "reloaded" {
			t.Fatalf("once the focus left %s, the page: %s", focused, got)
		}
	}
}
