package dashboard_test

import (
	"strings"
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

// While a refreshing page holds its reload back, its refresh line says
// so in words, in a polite live region: a link with the focus, or a
// filter typed and not sent, pauses it; the focus gone, it says so no
// more, but for the filter typed.
func TestBrowserRefreshSaysItIsPaused(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_paused")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Message: "gateway timeout"})
	base := "http://" + serve(t, st, serverOpts{})
	const paused = "paused while you type or a control has focus"
	line := func(want bool) string {
		return `(() => { const p = document.querySelector("p.refresh"); return p && p.textContent.includes("` + paused + `") === ` + map[bool]string{true: "true", false: "false"}[want] + ` ? p.textContent : ""; })()`
	}
	b.do("open the dead letters, refreshing", chromedp.Navigate(base+"/dlq?refresh=60"), page("groups"))
	if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => { const p = document.querySelector("p.refresh"); return p.getAttribute("aria-live") + " " + p.getAttribute("role"); })()`)); err != nil || got != "polite null" {
		t.Fatalf("the refresh line's aria-live and role: %q (%v), want polite and none", got, err)
	}
	// A click on the heading gives the page the focus of the window, as a
	// person's first key or click does: a headless tab starts without it,
	// and gets no focus events.
	b.do("focus a link", chromedp.Click(chromedp.CSS("h1")), chromedp.Focus(chromedp.CSS(`nav a[href="/audit"]`)))
	b.until("wait for the refresh line to say it is paused", line(true))
	b.do("leave the focus", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	b.until("wait for the refresh line to say it is not paused", line(false))
	b.do("type a filter", chromedp.Click(chromedp.ID("f-text")), chromedp.SendKeys(chromedp.ID("f-text"), "gateway"))
	b.until("wait for the refresh line to say it is paused", line(true))
	b.do("leave the field", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	if got := b.until("read the refresh line", `document.querySelector("p.refresh").textContent`); !strings.Contains(got, paused) {
		t.Fatalf("with a filter typed and not sent, the refresh line reads %q", got)
	}
}
