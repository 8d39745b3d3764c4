package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The overview's live counts can be paused (WCAG 2.2.2): its toggle
// button, pressed, stops asking for counts and says so in words; the
// page loaded again in the same tab stays paused; pressed again, the
// counts update once more.
func TestBrowserLiveCountsPause(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_hold")
	base := "http://" + serve(t, st, serverOpts{})
	const button = `button[data-live-pause]`
	state := func() string {
		t.Helper()
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => { const b = document.querySelector("`+button+`"); return b ? b.textContent.trim() + "|" + b.getAttribute("aria-pressed") + "|" + document.querySelector("[data-live-state]").textContent : ""; })()`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	b.do("open the overview", chromedp.Navigate(base+"/"), page("overview"),
		chromedp.Evaluate[chromedp.Void](`window.polls = 0; { const f = window.fetch; window.fetch = function () { window.polls++; return f.apply(this, arguments); }; }`))
	if got := state(); !strings.HasPrefix(got, "Pause live counts|false|") || !strings.Contains(got, "update every 5") {
		t.Fatalf("the overview's pause button and state read %q; want a button \"Pause live counts\", not pressed, and the counts said to update", got)
	}
	b.do("pause the counts", chromedp.Click(chromedp.CSS(button)),
		chromedp.Evaluate[chromedp.Void](`window.polls = 0; window.pausedAt = performance.now()`))
	if got := state(); !strings.HasPrefix(got, "Pause live counts|true|") || !strings.Contains(got, "paused") {
		t.Fatalf("paused, the button and state read %q", got)
	}
	// Two periods of the counts' 5 s pass, by the page's own clock.
	b.until("wait for 11 s", `performance.now() > window.pausedAt + 11000 ? "passed" : ""`)
	if n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`window.polls`)); err != nil || n != 0 {
		t.Fatalf("paused, the page asked for counts %d times in 11 s (%v)", n, err)
	}
	b.do("load the overview again", chromedp.Navigate(base+"/"), page("overview"))
	if got := state(); !strings.HasPrefix(got, "Pause live counts|true|") {
		t.Fatalf("loaded again, the paused counts' button and state read %q", got)
	}
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	b.do("resume the counts", chromedp.Click(chromedp.CSS(button)))
	if got := state(); !strings.HasPrefix(got, "Pause live counts|false|") || strings.Contains(got, "paused") {
		t.Fatalf("resumed, the button and state read %q", got)
	}
	b.until("wait for the new counts", `document.querySelector('tr[data-queue="`+q+`"] td[data-count="dlq_depth"]').textContent === "2" ? "updated" : ""`)
}
