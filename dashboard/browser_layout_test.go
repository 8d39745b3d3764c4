package dashboard_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
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

// At 375 px, as on a phone, no page is wider than the screen: not the
// overview, the circuits nor a dead message's page, with a queue named
// in 43 characters. The visually hidden labels of the tables' columns
// and buttons widened the overview to 971 px and the circuits to 913 px,
// and a long queue name pushed a health reason and a message's facts out.
func TestBrowserNarrowScreenPagesFit(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	const q = "billing_webhooks_reconcile_european_payment"
	pgtest.CreateQueue(t, st, q)
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "Billing::Webhooks::ReconcileEuropeanPaymentProviderEventsJob", Class: "Stripe::InvalidRequestError", Message: "No_such_payment_intent_pi_3NqLk2Fz8Hc0aBcDeFgHiJkLmNoPqRsTuVwXyZ_in_test_mode"})
	pgtest.Retrying(t, st, q)
	const breaker = "stripe_european_payment_provider_api_breaker"
	ctx := pgtest.Context(t)
	if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.BreakerFailure(ctx, breaker, "503 from the bank"); err != nil {
		t.Fatal(err)
	}
	pgtest.Held(t, st, q, breaker)
	base := "http://" + serve(t, st, serverOpts{})
	b.do("narrow the screen", chromedp.EmulateViewport(375, 800))
	for _, p := range []struct{ path, name string }{
		{"/", "overview"},
		{"/circuits", "circuits"},
		{"/dlq/message?queue=" + q + "_dlq&id=" + strconv.FormatInt(ids[0], 10), "message"},
	} {
		b.do("open "+p.path, chromedp.Navigate(base+p.path), page(p.name))
		// The payload's editor, where the page has one, is opened first.
		w, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("details").forEach(d => d.open = true), document.documentElement.scrollWidth`))
		if err != nil || w > 375 {
			t.Errorf("at 375 px, %s is %d px wide (%v); want 375 px at most", p.path, w, err)
		}
	}
}

// until evaluates expr until it gives a value other than "", and returns
// it: a page reloaded meanwhile, whose expression lost its document, is
// asked again.
func (b tab) until(what, expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err == nil && got != "" {
			return got
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("%s: %v (last: %q, %v); the page shows: %.2000s", what, ctx.Err(), got, err, b.shown())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// heldTimersJS makes a page keep, rather than run, the timers it sets for
// a second or more (window.heldTimers, their delays in ms), and run them
// when the test calls window.runHeldTimers(): a refresh then comes due
// when the test has done what it means to do first, however slow the
// machine is, and not 5 s after the page loaded, which a busy machine can
// pass before the test has clicked.
const heldTimersJS = `(() => {
	const run = window.setTimeout.bind(window);
	window.heldTimers = [];
	window.setTimeout = (fn, ms, ...args) => {
		if (!(ms >= 1000)) {
			return run(fn, ms, ...args);
		}
		window.heldTimers.push({fn: fn, ms: ms, args: args});
		return -window.heldTimers.length;
	};
	window.runHeldTimers = () => {
		for (const t of window.heldTimers.splice(0)) {
			t.fn(...t.args);
		}
	};
})()`

// holdTimers makes every page the tab loads from now on hold its long
// timers (heldTimersJS).
func holdTimers() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: heldTimersJS})
		return err
	})
}

// A page refreshing itself (?refresh=N) does not reload while a person
// types a filter, which a reload lost with its focus; the filter, sent,
// keeps the page refreshing; and a page nobody types in still reloads.
// The page's timers are held, and run once the filter is typed.
func TestBrowserRefreshWaitsForTyping(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_refresh")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Message: "gateway timeout"})
	base := "http://" + serve(t, st, serverOpts{})
	const typed = "gateway time"
	b.do("open the dead letters, refreshing, their timers held", holdTimers(), chromedp.Navigate(base+"/dlq?refresh=5"), page("groups"),
		chromedp.Evaluate[chromedp.Void](`window.kept = "kept"`),
		chromedp.Click(chromedp.ID("f-text")), chromedp.SendKeys(chromedp.ID("f-text"), typed))
	// The refresh comes due while the text is typed and not sent: the page
	// says it held its reload back, and asks again 5 s later.
	const state = `[window.kept, document.activeElement.id, document.getElementById("f-text").value, document.querySelector("main").getAttribute("data-refresh-held"), window.heldTimers.map(t => t.ms).join(" ")].join("|")`
	if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](state)); err != nil || got != "kept|f-text|"+typed+"||5000" {
		t.Fatalf("before the refresh is due, the page, its focus, the filter, the reloads held and the timers read %q (%v); want %q", got, err, "kept|f-text|"+typed+"||5000")
	}
	b.do("bring the refresh due", chromedp.Evaluate[chromedp.Void](`window.runHeldTimers()`))
	if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](state)); err != nil || got != "kept|f-text|"+typed+"|1|5000" {
		t.Fatalf("once the refresh was due, the page, its focus, the filter, the reloads held and the timers read %q (%v); want %q: the reload held back once, asked again in 5 s", got, err, "kept|f-text|"+typed+"|1|5000")
	}
	b.do("send the filter", chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)), loaded("groups", "text="))
	if loc := b.location(); !strings.Contains(loc, "refresh=5") {
		t.Fatalf("the filter sent from a refreshing page went to %s, which does not refresh", loc)
	}
	b.do("mark the page and bring its refresh due", chromedp.Evaluate[chromedp.Void](`window.kept = "kept"; window.runHeldTimers()`))
	if got := b.until("wait for the refresh", `window.kept ? "" : document.querySelector("main[data-page]").getAttribute("data-page")`); got != "groups" {
		t.Fatalf("a refreshing page nobody typed in, its refresh due: %s; want it reloaded", got)
	}
}
