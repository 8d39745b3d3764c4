package dashboard_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The refresh line does not overlap the page's heading at any width: at
// 320 and 640 px, as at 200% and 400% zoom, and at 1280 px. It floated
// over the heading, and drew over a paused queue's badge.
func TestBrowserRefreshLineClearsHeading(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_reconcile_payments")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	if _, err := newService(t, st).QueuePause(pgtest.Context(t), ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + serve(t, st, serverOpts{})
	const overlap = `(() => {
		const a = document.querySelector("main h1").getBoundingClientRect(), b = document.querySelector("main p.refresh").getBoundingClientRect();
		const apart = a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
		return apart ? "" : "h1 " + JSON.stringify(a) + " and the refresh line " + JSON.stringify(b);
	})()`
	for _, width := range []int64{320, 640, 1280} {
		b.do(fmt.Sprint("size the screen to ", width), chromedp.EmulateViewport(width, 800))
		for _, p := range []struct{ path, name string }{
			{"/queues/" + q + "?refresh=10", "queue"},
			{"/dlq?refresh=10", "groups"},
			{"/?refresh=10", "overview"},
		} {
			b.do("open "+p.path, chromedp.Navigate(base+p.path), page(p.name))
			if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](overlap)); err != nil || got != "" {
				t.Errorf("at %d px, %s draws %s over each other (%v)", width, p.path, got, err)
			}
		}
	}
}
