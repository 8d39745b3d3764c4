package dashboard_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The dead letters page lists the largest groups, as many as the store
// returns at once (store.MaxDeadGroups); past them a "Next page" link,
// under the base path and with the page's filters, lists the others, and
// says which they are. A cursor the page refuses, tampered
// with or of other filters, shows the error with a link to the first
// page of the page's filters.
func TestBrowserDeadGroupsNextPage(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	// Its own database: the page reads every DLQ.
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	const firstPage = store.MaxDeadGroups
	const groups = firstPage + 100
	q := pgtest.NewQueue(t, st, "dash_pages")
	other := pgtest.NewQueue(t, st, "dash_pages_other")
	// One message of each of as many error classes, each class with one
	// kind: a group each, written in one statement. The other queue's
	// groups are not the filter's.
	if err := st.BulkLoadDead(ctx, q, groups, groups); err != nil {
		t.Fatal(err)
	}
	if err := st.BulkLoadDead(ctx, other, 3, 3); err != nil {
		t.Fatal(err)
	}
	const prefix = "/ops"
	addr := serve(t, st, serverOpts{basePath: prefix})
	base := "http://" + addr + prefix
	// The error classes of the groups the page lists, in order.
	classes := func() []string {
		t.Helper()
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("li.group h2 bdi:last-of-type"), e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	attr := func(sel, name string) string {
		t.Helper()
		v, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
		if err != nil {
			t.Fatalf("read %s of %s: %v; the page shows: %.2000s", name, sel, err, b.shown())
		}
		return v.Value
	}

	b.do("open the dead letters of the queue", chromedp.Navigate(base+"/dlq?queue="+q), page("groups"))
	first := classes()
	if len(first) != firstPage || !strings.Contains(b.shown(), "“Next page” goes on") {
		t.Fatalf("the first page lists %d groups, want %d, with a note that “Next page” goes on: %.2000s", len(first), firstPage, b.shown())
	}
	next, err := url.Parse(attr(`a[rel="next"]`, "href"))
	if err != nil || next.Path != prefix+"/dlq" || next.Query().Get("queue") != q || next.Query().Get("cursor") == "" {
		t.Fatalf("the Next page link is %v (%v); want %s/dlq with the queue %s and a cursor", next, err, prefix, q)
	}
	cursor := next.Query().Get("cursor")

	b.do("open the next page", chromedp.Click(chromedp.CSS(`a[rel="next"]`)), loaded("groups", "cursor="))
	second := classes()
	if len(second) != groups-firstPage {
		t.Fatalf("the next page lists %d groups, want the other %d: %.2000s", len(second), groups-firstPage, b.shown())
	}
	every := slices.Concat(first, second)
	slices.Sort(every)
	every = slices.Compact(every)
	for i := range groups {
		if _, found := slices.BinarySearch(every, fmt.Sprintf("bench.Error%d", i)); !found {
			t.Fatalf("group bench.Error%d is on neither page", i)
		}
	}
	if len(every) != groups {
		t.Fatalf("the two pages list %d distinct groups, want %d", len(every), groups)
	}
	shown := b.shown()
	if !strings.Contains(shown, fmt.Sprintf("groups %d to %d of %d are listed", firstPage+1, groups, groups)) || b.count(`a[rel="next"]`) != 0 ||
		!strings.Contains(b.text("nav.pager"), "First page") {
		t.Fatalf("the last page should say which groups it lists, offer no next page and a way to the first: %.3000s", shown)
	}

	// A cursor whose count was changed, and the cursor of this queue given
	// with other filters.
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	fields["i"] = 2
	raw, _ = json.Marshal(fields)
	tampered := base64.RawURLEncoding.EncodeToString(raw)
	for what, c := range map[string]struct{ queue, cursor string }{
		"tampered with":    {q, tampered},
		"of other filters": {other, cursor},
	} {
		status := b.status("open a cursor "+what, chromedp.Navigate(base+"/dlq?queue="+c.queue+"&cursor="+url.QueryEscape(c.cursor)))
		b.do("wait for the error of a cursor "+what, page("problem"))
		again := `main a[href="` + prefix + `/dlq?queue=` + c.queue + `"]`
		if status != 400 || b.count(again) != 1 || !strings.Contains(b.text(again), "first page") {
			t.Fatalf("a cursor %s: %d; want 400 with a link to the first page of %s: %.2000s", what, status, c.queue, b.shown())
		}
		b.do("start again from the first page", chromedp.Click(chromedp.CSS(again)), page("groups"))
		if n := len(classes()); strings.Contains(b.location(), "cursor=") || n != min(firstPage, map[string]int{q: groups, other: 3}[c.queue]) {
			t.Fatalf("the first page the error links, at %s, lists %d groups", b.location(), n)
		}
	}

	// Every group gone since the first page: the next page says no group
	// follows any more, and links the first page.
	// A context of its own: on a busy machine the pages above may take
	// the two minutes of the test's.
	if _, err := st.PurgeQueue(pgtest.Context(t), store.DLQName(q)); err != nil {
		t.Fatal(err)
	}
	b.do("open the next page of groups gone", chromedp.Navigate("http://"+addr+next.String()), page("groups"))
	first1 := `main p.empty a[href="` + prefix + `/dlq?queue=` + q + `"]`
	if shown := b.shown(); !strings.Contains(shown, "no group ranks after the last of the page before any more") || b.count(first1) != 1 {
		t.Fatalf("the next page of groups gone should say so and link the first page: %.2000s", shown)
	}
}
