//go:build linux || darwin

package dashboard_test

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// An overview left open while the database stops says so above its
// numbers, in a status line a screen reader reads out, with the server's
// words; its numbers are marked as stale, from the time of their last
// check, no longer "checked just now". Once the database is back, the
// next update clears the line and the mark.
func TestBrowserLiveCountsDuringAnOutage(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	ctx := pgtest.Context(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	pgtest.CreateQueue(t, st, "outage_live")
	base := "http://" + serve(t, st, serverOpts{})
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))
	}
	b.do("open the overview", chromedp.Navigate(base+"/"), page("overview"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="outage_live"]`)))
	if n := b.count(`[data-live-problem]:not([hidden])`); n != 0 {
		t.Fatalf("the overview shows %d problem lines while the database answers", n)
	}

	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The line is above the numbers, in a live region, with the server's
	// text; the time of the check is no longer "just now".
	b.do("wait for the outage to show", until(`(() => {
		const p = document.querySelector("[data-live-problem]");
		const health = document.querySelector("[data-live-health]");
		if (!p || p.hidden || !(p.getAttribute("role") === "alert" || p.getAttribute("role") === "status")) return false;
		if (!(p.compareDocumentPosition(health) & Node.DOCUMENT_POSITION_FOLLOWING)) return false;
		const checked = document.querySelector('[data-live-time="checked_at"]').textContent;
		return p.textContent.includes("the database does not answer") && p.textContent.includes("pgbus could not read the counts") &&
			!checked.includes("just now") && /\d\d:\d\d/.test(checked) && checked.includes("stale") &&
			health.classList.contains("stale");
	})()`))
	if text := b.text("[data-live-problem]"); text == "" {
		t.Fatal("the problem line is empty")
	}

	pgtest.StartCluster(t, dir)
	b.do("wait for the outage to clear", until(`(() => {
		const p = document.querySelector("[data-live-problem]");
		const health = document.querySelector("[data-live-health]");
		const checked = document.querySelector('[data-live-time="checked_at"]').textContent;
		return p.hidden && p.textContent === "" && checked.includes("just now") && !checked.includes("stale") && !health.classList.contains("stale");
	})()`))
}

// An overview left open while the dashboard itself cannot be reached (the
// process stopped, the network down) says so above its numbers, and marks
// them as stale.
func TestBrowserLiveCountsWhenTheDashboardIsGone(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_gone")
	// In front of it, a reverse proxy that the test stops: then nothing
	// listens at the address the page came from.
	target, err := url.Parse("http://" + serve(t, st, serverOpts{}))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }})
	t.Cleanup(front.Close)
	b.do("open the overview", chromedp.Navigate(front.URL+"/"), page("overview"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="`+q+`"]`)))
	front.CloseClientConnections()
	front.Close()
	b.do("wait for the problem to show", chromedp.Poll[chromedp.Void](`(() => {
		const p = document.querySelector("[data-live-problem]");
		const checked = document.querySelector('[data-live-time="checked_at"]').textContent;
		return !p.hidden && p.textContent.includes("The dashboard could not be reached") && checked.includes("stale") && !checked.includes("just now");
	})()`, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
}
