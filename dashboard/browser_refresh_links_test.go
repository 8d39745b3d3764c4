package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A page's auto-refresh stays on as a person follows its group links and
// pages on: the links of the dead letters' groups, and the next pages of
// a group's messages and of a queue's, keep ?refresh= as the filter forms
// do.
func TestBrowserRefreshKeptByLinks(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	dq := pgtest.NewQueue(t, st, "dash_rlinks")
	pgtest.DeadLetterN(t, st, dq, ops.DefaultPageSize+1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	lq, _ := levelQueue(t, svc, ops.DefaultPageSize)
	base := "http://" + serve(t, st, serverOpts{})
	const kept = "refresh=3600"
	at := func(what string) {
		t.Helper()
		if loc := b.location(); !strings.Contains(loc, kept) {
			t.Fatalf("%s went to %s, which does not refresh", what, loc)
		}
	}
	b.do("open the dead letters, refreshing", chromedp.Navigate(base+"/dlq?"+kept), page("groups"))
	if links, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('li.group a[href^="/dlq/messages"]'), a => a.getAttribute("href"))`)); err != nil || len(links) == 0 {
		t.Fatalf("the groups' links to their messages: %q (%v)", links, err)
	} else {
		for _, l := range links {
			if !strings.Contains(l, kept) {
				t.Errorf("a group's link %s drops the refresh", l)
			}
		}
	}
	b.do("open the group", chromedp.Click(chromedp.CSS("li.group h2 a")), page("list"))
	at("the group's link")
	b.do("open its next page", chromedp.Click(chromedp.CSS(`a[rel="next"]`)), loaded("list", "cursor="))
	at("the next page of the group's messages")
	b.do("open the queue, refreshing", chromedp.Navigate(base+"/queues/"+lq+"?"+kept), page("queue"),
		chromedp.Click(chromedp.CSS(`a[rel="next"]`)), loaded("queue", "cursor="))
	at("the next page of the queue's messages")
}
