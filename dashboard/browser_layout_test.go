package dashboard_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// columns are the widths, in CSS pixels, of the columns of the first
// table on the page, by their headers' text.
func (b tab) columns() map[string]float64 {
	b.t.Helper()
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]float64](`Object.fromEntries(Array.from(document.querySelectorAll("main table thead th"), th => [th.textContent.trim(), th.getBoundingClientRect().width]))`))
	if err != nil {
		b.t.Fatalf("measure the columns: %v", err)
	}
	return got
}

// A long kind, as a producer may send, does not take a dead message's
// row: at 1280 px the Kind column stays narrow and wraps, and the Error
// column keeps a width to read in, on the dead messages' lists and on a
// queue's page. An unbroken kind of 192 characters
// took 1783 px and left the error 58 px, a character a line.
func TestBrowserLongKindLeavesErrorReadable(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_kind")
	long := "Billing::Webhooks::" + strings.Repeat("ReconcileEuropeanPaymentProviderEvents", 5) + "Job"
	pgtest.DeadLetter(t, st, q,
		pgtest.DeadSpec{Kind: long, Class: "Stripe::InvalidRequestError", Message: "No such payment_intent: pi_3Nq; a similar object exists in live mode, but a test mode key was used to make this request."},
		pgtest.DeadSpec{Kind: "Billing::Webhooks::ReconcileEuropeanPaymentProviderEventsJob", Class: "Net::ReadTimeout", Message: "Net::ReadTimeout with #<TCPSocket:(closed)>"})
	pgtest.RetryingMessage(t, st, q, store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": "` + long + `"}`)})
	base := "http://" + serve(t, st, serverOpts{})
	b.do("open the queue's page", chromedp.Navigate(base+"/queues/"+q), page("queue"))
	if cols := b.columns(); cols["Kind"] > 480 || cols["Last error"] < 100 {
		t.Fatalf("at 1280 px, the queue's page with a kind of %d characters has columns %v; want Kind 480 px or less, Last error 100 px or more", len(long), cols)
	}
	for _, path := range []string{"/dlq/messages?queue=" + q, "/dlq/messages"} {
		b.do("open "+path, chromedp.Navigate(base+path), page("list"))
		cols := b.columns()
		if cols["Error"] < 300 || cols["Kind"] > 320 {
			t.Fatalf("at 1280 px, %s with a kind of %d characters has columns %v; want Error 300 px or more, Kind 320 px or less", path, len(long), cols)
		}
		if w, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 1280 {
			t.Fatalf("%s is %d px wide at 1280 px (%v)", path, w, err)
		}
	}
}
