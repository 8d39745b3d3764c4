package dashboard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// In a browser, a queue's name on the overview opens its page, which
// lists the messages of its three priority levels in order, level 0
// first; its next page, its state filter and its payloads open by
// clicking; a kind and a payload holding a script show it as text.
func TestBrowserQueuePage(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q, want := levelQueue(t, newService(t, st), ops.DefaultPageSize)
	base := "http://" + serve(t, st, serverOpts{allowPayloads: true})
	listed := func() []string {
		t.Helper()
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tbody tr"), tr => tr.dataset.level + "/" + tr.dataset.msg)`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	b.do("open the queue from the overview", chromedp.Navigate(base+"/"), page("overview"),
		chromedp.Click(chromedp.CSS(`tr[data-queue="`+q+`"] th a`)), page("queue"))
	if got := listed(); !slices.Equal(got, want[:ops.DefaultPageSize]) || b.text("h1") != "Queue "+q || b.text("tbody tr td") != "0" {
		t.Fatalf("the queue's page %q lists %v, the first level %q; want %v, level 0 first", b.text("h1"), got, b.text("tbody tr td"), want[:ops.DefaultPageSize])
	}
	b.do("open the next page", chromedp.Click(chromedp.CSS(`a[rel="next"]`)), loaded("queue", "cursor="))
	if got := listed(); !slices.Equal(got, want[ops.DefaultPageSize:]) || !strings.Contains(b.text("nav.pager"), "First page") {
		t.Fatalf("the next page lists %v, want %v, with a way to the first page", got, want[ops.DefaultPageSize:])
	}

	b.do("filter to the scheduled messages", chromedp.SetValue(chromedp.ID("f-state"), "scheduled"),
		chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)), loaded("queue", "state=scheduled"))
	if got, loc := listed(), b.location(); !slices.Equal(got, want[len(want)-1:]) || !strings.Contains(loc, "state=scheduled") {
		t.Fatalf("the scheduled messages at %s: %v, want %v", loc, got, want[len(want)-1:])
	}
	b.do("show the payloads", chromedp.Click(chromedp.CSS(`p[data-payloads] a`)), page("queue"), chromedp.WaitVisible(chromedp.CSS(`td.payload`)))
	if loc := b.location(); !strings.Contains(loc, "state=scheduled") || !strings.Contains(loc, "payload=1") {
		t.Fatalf("showing the payloads lost the filter: %s", loc)
	}
	if kind, payload := b.text("tbody tr td:nth-of-type(3)"), b.text("td.payload pre:not(.headers)"); kind != injection || !strings.Contains(payload, `"note": "`+strings.ReplaceAll(injection, `"`, `\"`)+`"`) {
		t.Fatalf("the kind shows %q and the payload %q; want the script as text", kind, payload)
	}
	if n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("main script, main img").length + (window.pwned ? 100 : 0)`)); err != nil || n != 0 {
		t.Fatalf("the producer's script became part of the page (%d, %v)", n, err)
	}
}

// loaded waits for the page name at an address holding part: after a
// click on a link or a form of a page of the same name, the page on screen
// is the old one until the new one is committed, and an expression
// evaluated meanwhile may lose its document.
func loaded(name, part string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			loc, err := chromedp.Location()(ctx, t)
			if err == nil && strings.Contains(loc, part) {
				return page(name)(ctx, t)
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for an address holding %q, at %q: %w", part, loc, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// In a browser, the page of a queue named pause, as the address its
// button's form is sent to, pauses and resumes it by its button.
func TestBrowserQueueNamedPause(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	pgtest.CreateQueue(t, st, "pause")
	base := "http://" + serve(t, st, serverOpts{})
	b.do("open the queue's page", chromedp.Navigate(base+"/queues/pause"), page("queue"))
	for _, verb := range []string{"Pause", "Resume"} {
		if got := b.text("p.actions button"); !strings.HasPrefix(got, verb) || b.text("h1") != "Queue pause"+map[bool]string{true: " paused"}[verb == "Resume"] {
			t.Fatalf("before the %s, the page %q offers %q", verb, b.text("h1"), got)
		}
		b.do(verb+" it", chromedp.Click(chromedp.CSS(`p.actions button`)), page("done"))
		b.do("go back to its page", chromedp.Click(chromedp.CSS(`main a[href="/queues/pause"]`)), page("queue"))
	}
	if got := b.text("p.actions button"); !strings.HasPrefix(got, "Pause") {
		t.Fatalf("after the resume, the page offers %q", got)
	}
}

// In a browser, the button of a queue's page runs its retrying messages
// now, and the page seen again offers it no more.
func TestBrowserQueueRunNow(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_bnow")
	pgtest.Retrying(t, st, q)
	base := "http://" + serve(t, st, serverOpts{})
	const button = `p.actions button[formaction="/queues/run-now"]`
	b.do("open the queue's page", chromedp.Navigate(base+"/queues/"+q), page("queue"))
	b.do("run its retries now", chromedp.Click(chromedp.CSS(button)), page("done"))
	if got, want := b.text("h1"), "1 retrying message of queue "+q+" run now"; got != want {
		t.Fatalf("after run now: %q, want %q", got, want)
	}
	b.do("go back to its page", chromedp.Click(chromedp.CSS(`main a[href="/queues/`+q+`"]`)), page("queue"))
	if b.count(button) != 0 {
		t.Fatal("the queue's page still offers to run its retries now")
	}
}
