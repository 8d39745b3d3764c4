package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// On the circuits page, a breaker opened by a 429 with a Retry-After says,
// under its state, that the downstream limits its rate or concurrency and
// names max_concurrency, the setting that bounds the requests in flight,
// and where it goes; a breaker opened by a 503 without a Retry-After, a
// downstream that is down, says nothing of it.
func TestBrowserCircuitSaysRateLimited(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	limited, down := pgtest.Name("bank_api"), pgtest.Name("mail_api")
	for name, f := range map[string]store.FailedCall{
		limited: {Error: "POST https://bank.example.com/charge: 429 Too Many Requests", Class: "http.429", RetryAfter: 30 * time.Second},
		down:    {Error: "POST https://mail.example.com/send: 503 Service Unavailable", Class: "http.503"},
	} {
		if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if c, err := st.BreakerFailedWith(ctx, name, f); err != nil || c.To != store.BreakerOpen {
			t.Fatalf("failure of %s = %+v, %v; want it open", name, c, err)
		}
	}
	base := "http://" + serve(t, st, serverOpts{})
	b.do("open the circuits", chromedp.Navigate(base+"/circuits"), page("circuits"))
	if n := b.count("span.rate-limited"); n != 1 {
		t.Fatalf("%d breakers say their downstream limits its rate; want the one a 429 opened. The page shows:\n%s", n, b.shown())
	}
	row := b.text(`tr:has(span.rate-limited) th[scope="row"]`)
	said := b.text("span.rate-limited")
	if row != limited {
		t.Errorf("the breaker said to be rate limited is %q; want %s", row, limited)
	}
	for _, want := range []string{"the downstream limits its rate or concurrency (its last answer a 429)", "bound the requests in flight with max_concurrency",
		"in the options of the http handler of each queue that uses the breaker"} {
		if !strings.Contains(said, want) {
			t.Errorf("the circuits page says of %s %q; want it to say %q", limited, said, want)
		}
	}
}
