package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The preview of a retry of selected messages and its outcome each have
// the title their heading says: both were "Selected dead messages". The
// preview of one message says "its queue", not "their queue".
func TestBrowserSelectedTitles(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_seltitle")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	base := "http://" + serve(t, st, serverOpts{})
	titled := func(want string) {
		t.Helper()
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[document.title, document.querySelector("h1").textContent]`))
		if err != nil || len(got) != 2 || got[1] != want || got[0] != want+" · pgbus" {
			t.Errorf("the page's title and heading are %q (%v), want %q", got, err, []string{want + " · pgbus", want})
		}
	}
	b.do("preview a retry of a selected message", chromedp.Navigate(base+"/dlq/messages?queue="+q+"_dlq"), page("list"),
		chromedp.Click(chromedp.CSS(`tbody input[type=checkbox]`)), chromedp.Click(chromedp.CSS(`button[value="retry"]`)), page("selected"))
	titled("Retry selected messages")
	if text := b.text(".lead"); !strings.Contains(text, "1 of 1 selected message would move back to its queue.") {
		t.Errorf("the preview says %q; want one message moving back to its queue", text)
	}
	b.do("retry it", chromedp.Click(chromedp.CSS(`form.confirm button[type=submit]`)), loaded("selected", "/dlq/selected"),
		chromedp.WaitVisible(chromedp.CSS(`main:not(:has(form.confirm))`)))
	titled("Retried 1 message")
}
