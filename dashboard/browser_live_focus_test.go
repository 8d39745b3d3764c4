package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A live update that takes away the focused link of a queue's dead
// letters (its count down to 0) moves the focus to the queue's link in
// the same row first, rather than dropping it to the page's start.
func TestBrowserLiveCountKeepsFocus(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_lfocus")
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	base := "http://" + serve(t, st, serverOpts{})
	row := `tr[data-queue="` + q + `"]`
	b.do("focus the dead letters' count", chromedp.Navigate(base+"/"), page("overview"), chromedp.Click(chromedp.CSS("h1")),
		chromedp.Focus(chromedp.CSS(row+` td[data-count="dlq_depth"] a`)))
	if _, err := svc.DLQDiscard(pgtest.Context(t), ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}}); err != nil {
		t.Fatal(err)
	}
	b.until("wait for the count of 0", `document.querySelector('`+row+` td[data-count="dlq_depth"]').textContent === "0" ? "0" : ""`)
	if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.activeElement === document.querySelector('`+row+` th a') ? "queue link" : document.activeElement.outerHTML`)); err != nil || got != "queue link" {
		t.Fatalf("once the dead letters' count went to 0, the focus is on %s (%v), want the queue's link", got, err)
	}
}
