package dashboard_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A dead message's error text of several lines, as an exec handler's
// stderr, keeps its lines on the message page, where it is shown whole:
// in the reason it died and in its failures.
func TestBrowserErrorTextKeepsItsLines(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_lines")
	const msg = "first line of stderr\nsecond line of stderr\nthird line of stderr"
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: msg})
	base := "http://" + serve(t, st, serverOpts{})
	b.do("open the message", chromedp.Navigate(base+pageURLOf("/dlq/message", "queue", q+"_dlq", "id", fmt.Sprint(ids[0]))), page("message"))
	// Each element showing the text is laid out on at least three lines:
	// an inline element has one box per line it spans.
	lines, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll("main code"))
		.filter(c => c.textContent.includes("first line of stderr"))
		.map(c => c.getClientRects().length)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 2 {
		t.Fatalf("the message page shows the error text in %d elements, want it in the reason and in the failures: %.2000s", len(lines), b.shown())
	}
	for i, n := range lines {
		if n < 3 {
			t.Errorf("the error text of 3 lines is shown on %d lines (element %d of %d): %v", n, i+1, len(lines), lines)
		}
	}
}
