package dashboard_test

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A dead message's buttons, retry and discard, show a preview first, as
// the list's ticked messages do, and only its confirmation moves the
// message: they moved it at the first click.
func TestBrowserMessagePagePreviews(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_msgprev")
	ids := pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "charge", Message: "boom"})
	base := "http://" + serve(t, st, serverOpts{})
	dead := func() int64 { return deadCount(t, svc, ops.DeadFilter{Queue: q}) }
	for i, step := range []struct{ verb, preview, done string }{
		{"retry", "Retry selected messages", "Retried 1 message"},
		{"discard", "Discard selected messages", "Discarded 1 message"},
	} {
		msg := base + "/dlq/message?queue=" + q + "_dlq&id=" + strconv.FormatInt(ids[i], 10)
		b.do("open message "+strconv.FormatInt(ids[i], 10), chromedp.Navigate(msg), page("message"),
			chromedp.Click(chromedp.CSS(`main .actions form:nth-of-type(`+strconv.Itoa(i+1)+`) button`)))
		shown := b.until("wait for the page after the "+step.verb+" button", `location.pathname !== "/dlq/message" && document.readyState === "complete" && document.querySelector("main") ? document.querySelector("main").dataset.page + ": " + document.querySelector("h1").textContent : ""`)
		if want := "selected: " + step.preview; shown != want || dead() != int64(2-i) {
			t.Fatalf("the %s button of a message's page shows %q, %d messages left dead; want %q, nothing moved", step.verb, shown, dead(), want)
		}
		b.do("confirm the "+step.verb, chromedp.Click(chromedp.CSS(`form.confirm button[type="submit"]`)))
		got := b.until("wait for the "+step.verb+" to be done", `document.readyState === "complete" && document.querySelector("h1") && document.querySelector("h1").textContent !== "`+step.preview+`" ? document.querySelector("h1").textContent : ""`)
		if got != step.done || dead() != int64(1-i) {
			t.Fatalf("the %s confirmed: %q, %d messages left dead; want %q", step.verb, got, dead(), step.done)
		}
	}
}
