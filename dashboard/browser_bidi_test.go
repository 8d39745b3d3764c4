package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A bidirectional override in a job's kind (U+202E, RIGHT-TO-LEFT
// OVERRIDE) stays within the kind: the error class shown after it on a
// group's heading reads left to right, as written. Without isolation it
// was shown reversed ("1_tixe.cexe"), and so could any text after a kind.
func TestBrowserBidiOverrideStaysInItsKind(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_bidi")
	pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "charge_card\u202e", Class: "exec.exit_1", Message: "boom"})
	base := "http://" + serve(t, st, serverOpts{})
	b.do("open the dead letters", chromedp.Navigate(base+"/dlq?queue="+q), page("groups"))
	// The screen positions of the error class's first and last letters:
	// left to right, the first is left of the last.
	reads, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => {
		const walker = document.createTreeWalker(document.querySelector("main h2"), NodeFilter.SHOW_TEXT);
		for (let n = walker.nextNode(); n; n = walker.nextNode()) {
			const i = n.data.indexOf("exec.exit_1");
			if (i < 0) continue;
			const at = k => { const r = document.createRange(); r.setStart(n, k); r.setEnd(n, k + 1); return r.getBoundingClientRect().left; };
			return at(i) < at(i + "exec.exit_1".length - 1) ? "ltr" : "reversed";
		}
		return "missing";
	})()`))
	if err != nil || reads != "ltr" {
		t.Fatalf("the error class after a kind ending in U+202E reads %q (%v); want ltr", reads, err)
	}
}
