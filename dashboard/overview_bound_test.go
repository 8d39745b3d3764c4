package dashboard_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// bigInstall opens a store on a database of its own holding a large
// install: 300 queues, big_000 to big_299, of which 12 have a message and
// no worker (STALLED), 30 dead messages dead-lettered in the last hour and
// 5 are paused (DEGRADED); the rest are quiet. It returns the store and
// the names of the first three kinds. The install is made once, as a
// template that each test's database copies.
func bigInstall(t *testing.T) (st *store.Store, ready, dead, paused []string) {
	t.Helper()
	names := bigNames()
	ready, dead, paused = names[:12], names[12:42], names[42:47]
	return pgtest.OpenStore(t, pgtest.FromTemplate(t, "big install", buildBigInstall)), ready, dead, paused
}

// bigNames are the queues of bigInstall.
func bigNames() []string {
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("big_%03d", i)
	}
	return names
}

// buildBigInstall makes bigInstall's queues in the database at url.
func buildBigInstall(tb testing.TB, url string) {
	ctx := pgtest.Context(tb)
	st, err := store.Open(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close() // a template is copied with no session on it
	names := bigNames()
	// Four at a time: each create makes two queues' tables.
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(names); i += 4 {
				if err := st.CreateQueue(ctx, names[i]); err != nil {
					errs <- fmt.Errorf("create queue %s: %w", names[i], err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	ready, dead, paused := names[:12], names[12:42], names[42:47]
	for _, q := range ready {
		if _, err := st.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`1`)}); err != nil {
			tb.Fatal(err)
		}
	}
	minute := time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Minute)
	var deltas []store.StatsDelta
	for i, q := range dead {
		pgtest.DeadLetterN(tb, st, q, 1+i%3, pgtest.DeadSpec{Kind: "k", Message: "boom"})
		deltas = append(deltas, store.StatsDelta{Minute: minute, Queue: q, Kind: "k", DeadLettered: int64(1 + i%3)})
	}
	if err := st.AddStats(ctx, deltas); err != nil {
		tb.Fatal(err)
	}
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	for _, q := range paused {
		if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
			tb.Fatal(err)
		}
	}
}

// The overview of 300 queues lists the first 20 health reasons, every
// STALLED one first, and the 50 queues that most need a look, those with
// dead messages first; each list says how many more there are, and its
// link lists them all. It charts the 20 busiest queues, names the 10
// others that ran jobs, and counts the 270 that ran none in one line,
// naming them only when every queue is asked for. /live answers for the
// queues listed only, and a box finds queues by name.
func TestBrowserOverviewOfManyQueues(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st, ready, dead, paused := bigInstall(t)
	all, err := newService(t, st).Overview(pgtest.Context(t), ops.OverviewRequest{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := len(all.Health.Reasons)
	if reasons != len(ready)+len(dead)+len(paused) {
		t.Fatalf("the install has %d health reasons, want %d: %+v", reasons, len(ready)+len(dead)+len(paused), all.Health.Reasons)
	}
	base := "http://" + serve(t, st, serverOpts{})
	b.do("open the overview", chromedp.Navigate(base+"/"), page("overview"))

	if n, stalled := b.count("ul.reasons li"), b.count("ul.reasons li:nth-child(-n+12) .badge-stalled"); n != 20 || stalled != len(ready) {
		t.Fatalf("the overview lists %d reasons, the first 12 with %d STALLED; want 20, the %d STALLED ones first", n, stalled, len(ready))
	}
	if text, want := b.text(`[data-more="reasons"]`), fmt.Sprintf("%d more reasons are not listed", reasons-20); !strings.Contains(text, want) || !strings.Contains(text, fmt.Sprintf("Show all %d reasons", reasons)) {
		t.Fatalf("the reasons end with %q; want %q and a link to all %d", text, want, reasons)
	}
	rows := b.rows()
	if len(rows) != 50 {
		t.Fatalf("the overview lists %d queues, want 50", len(rows))
	}
	// The dead first, the most dead messages first (3, 2, then 1 each, by
	// name); then the backlog and the paused; then quiet ones.
	var mostDead []string
	for n := 2; n >= 0; n-- {
		for i, q := range dead {
			if i%3 == n {
				mostDead = append(mostDead, q)
			}
		}
	}
	if !slices.Equal(rows[:30], mostDead) || !sameSet(rows[30:47], append(slices.Clone(ready), paused...)) {
		t.Fatalf("the overview lists the queues %v; want the %d with dead messages (most first), then the %d with a backlog or paused", rows, len(dead), len(ready)+len(paused))
	}
	if text := b.text(`[data-more="queues"]`); !strings.Contains(text, "250 more queues are not listed") || !strings.Contains(text, "Show all 300 queues") {
		t.Fatalf("the queue table ends with %q; want 250 more and a link to all 300", text)
	}
	b.throughput("the overview", 20, 10, 0)
	b.barsDrawn()
	if text := b.text(`[data-names="quiet"]`); !strings.Contains(text, "No jobs ran in the last hour in 270 queues.") || b.count(`[data-names="quiet"] a`) != 1 {
		t.Fatalf("the quiet queues are summed up as %q; want 270 and a link that names them", text)
	}
	live := liveOf(t, base, "/live", 50, 250, 0)
	if !slices.Equal(live, rows) || b.liveSrc() != "/live" {
		t.Fatalf("/live lists %v, from %s; want the page's rows %v", live, b.liveSrc(), rows)
	}

	// The script updates the listed rows, and a queue left out is not one
	// created or dropped.
	const cell = `document.querySelector('tr[data-queue] td[data-count="visible"]')`
	b.do("wait for the live counts", chromedp.Evaluate[chromedp.Void](cell+`.textContent = "stale"`),
		chromedp.Poll[chromedp.Void](cell+`.textContent !== "stale"`, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	if note, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("[data-live-note]").textContent`)); err != nil || note != "" {
		t.Fatalf("with no queue changed the live note says %q (%v)", note, err)
	}

	b.follow("list every reason", chromedp.Click(chromedp.CSS(`[data-more="reasons"] a`)))
	if n, rows := b.count("ul.reasons li"), b.rows(); n != reasons || len(rows) != 50 || b.count(`[data-more="reasons"]`) != 0 {
		t.Fatalf("with every reason: %d reasons and %d queues listed; want %d and 50, and no more line for reasons", n, len(rows), reasons)
	}
	b.follow("list every queue", chromedp.Click(chromedp.CSS(`[data-more="queues"] a`)))
	if n, rows := b.count("ul.reasons li"), b.rows(); n != reasons || len(rows) != 300 || b.count("[data-more]") != 0 {
		t.Fatalf("with every queue: %d reasons and %d queues listed; want %d and 300, and no more line", n, len(rows), reasons)
	}
	if loc := b.location(); !strings.Contains(loc, "reasons=all") || !strings.Contains(loc, "queues=all") {
		t.Fatalf("the link to every queue went to %s: it should keep every reason listed", loc)
	}
	b.throughput("every queue", 20, 10, 270)
	if live := liveOf(t, base, b.liveSrc(), 300, 0, 0); !slices.Equal(live, b.rows()) {
		t.Fatalf("/live of every queue lists %v; want the page's rows", live)
	}

	// The box finds queues by a part of their name, the page's other
	// parameters kept; a part no name has says so.
	b.follow("find the queues named big_01*", chromedp.SendKeys(chromedp.ID("q-name"), "big_01"), chromedp.Submit(chromedp.ID("q-name")))
	want := []string{"big_010", "big_011", "big_012", "big_013", "big_014", "big_015", "big_016", "big_017", "big_018", "big_019"}
	if rows, n := b.rows(), b.count("ul.reasons li"); !sameSet(rows, want) || n != reasons {
		t.Fatalf("the queues named big_01*: %v, with %d reasons; want %v and all %d reasons", rows, n, want, reasons)
	}
	if text := b.text(`[data-more="name"]`); !strings.Contains(text, "10 of the 300 queues have a name that contains “big_01”") || b.count(`[data-more="queues"]`) != 0 {
		t.Fatalf("the queues named big_01* are announced as %q, with %d more lines for queues", text, b.count(`[data-more="queues"]`))
	}
	// Of big_010 to big_019, big_012 and on have dead messages counted.
	b.throughput("the queues named big_01*", 8, 0, 2)
	if text := b.text(`[data-names="quiet"]`); text != "No jobs ran in the last hour in big_010, big_011." {
		t.Fatalf("the quiet queues named big_01* are summed up as %q", text)
	}
	if live := liveOf(t, base, b.liveSrc(), 10, 0, 290); !sameSet(live, want) {
		t.Fatalf("/live of the queues named big_01* lists %v; want %v", live, want)
	}
	b.do("find a name no queue has", chromedp.Navigate(base+"/?name=no_such"), page("overview"))
	if text, rows := b.text("p.empty"), b.rows(); !strings.Contains(text, "No queue's name contains “no_such”") || len(rows) != 0 {
		t.Fatalf("a name no queue has: %q, %d rows", text, len(rows))
	}

	// A queue not listed that gets dead messages now needs a look more
	// than one listed: the note says so, not that queues were created;
	// a queue created is told as such.
	b.do("open the overview again", chromedp.Navigate(base+"/"), page("overview"))
	pgtest.DeadLetterN(t, st, "big_299", 5, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	b.waitNote("Queues not listed here now need a look more than some that are.")
	if note := b.text("[data-live-note]"); strings.Contains(note, "created") || strings.Contains(note, "paused") {
		t.Fatalf("with a queue's rank changed the note says %q", note)
	}
	pgtest.CreateQueue(t, st, "big_new")
	b.waitNote("Queues were created or dropped since this page was loaded.")

	// A queue created and another dropped between two of the script's
	// requests leave the number of queues as it was: the digest of their
	// names tells them.
	b.do("open the overview once more", chromedp.Navigate(base+"/"), page("overview"))
	pgtest.CreateQueue(t, st, "big_newer")
	if err := st.DropQueue(pgtest.Context(t), "big_new"); err != nil {
		t.Fatal(err)
	}
	b.waitNote("Queues were created or dropped since this page was loaded.")
}

// follow runs steps that load another overview from this one, and waits
// until it has loaded whole: the overview it leaves matches page() too.
func (b tab) follow(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.do(what, append([]chromedp.Action[chromedp.Void]{chromedp.Evaluate[chromedp.Void](`window.pgbusLeft = true`)}, steps...)...)
	loaded := chromedp.Poll[chromedp.Void](`window.pgbusLeft === undefined && document.readyState === "complete"`,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))
	// A wait started on the page left fails as it goes (-32000): wait again.
	for range 3 {
		err := chromedp.Do(b.ctx, loaded, page("overview"))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "(-32000)") {
			b.t.Fatalf("%s: wait for the page: %v", what, err)
		}
	}
	b.t.Fatalf("%s: the page kept navigating", what)
}

// throughput checks the overview's throughput section: its charts, the
// queues named as having run jobs without a chart, and those named as
// having run none.
func (b tab) throughput(what string, charts, ran, quiet int) {
	b.t.Helper()
	if c, r, q := b.count("figure.chart svg.tp"), b.count(`[data-names="ran"] .qname`), b.count(`[data-names="quiet"] .qname`); c != charts || r != ran || q != quiet {
		b.t.Fatalf("the throughput of %s: %d charts, %d queues named that ran jobs, %d that ran none; want %d, %d and %d", what, c, r, q, charts, ran, quiet)
	}
	if n := b.count("figure.chart"); n != charts {
		b.t.Fatalf("the throughput of %s has %d figures for %d charts", what, n, charts)
	}
}

// barsDrawn checks, in the first chart, that the plot's units are drawn as
// the chart's: a bucket's slot is as tall as the plot (108 of the chart's
// 150), its bar stands within it, and the slot lies over the bar, so that
// the bar shows the slot's hover text.
func (b tab) barsDrawn() {
	b.t.Helper()
	ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => {
		const svg = document.querySelector("svg.tp"), slot = svg.querySelector(".slots rect"), bar = svg.querySelector("g path");
		svg.scrollIntoView({block: "center"});
		const s = svg.getBoundingClientRect(), r = slot.getBoundingClientRect(), p = bar.getBoundingClientRect();
		const hit = document.elementFromPoint(p.left + p.width / 2, p.top + p.height / 2);
		if (Math.abs(r.height - s.height * 108 / 150) > 1 || p.height <= 0 || p.width <= 0 || p.left < r.left - 1 || p.right > r.right + 1 || p.bottom > r.bottom + 1) {
			return "slot " + JSON.stringify(r) + ", bar " + JSON.stringify(p) + " in a chart " + JSON.stringify(s);
		}
		return hit === slot ? "" : "the bar's middle shows " + (hit && hit.outerHTML.slice(0, 200));
	})()`))
	if err != nil || ok != "" {
		b.t.Fatalf("the first chart's bar is not drawn in its slot: %s (%v)", ok, err)
	}
}

// liveSrc is the address of the overview's live counts.
func (b tab) liveSrc() string {
	b.t.Helper()
	src, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("[data-live-src]").getAttribute("data-live-src")`))
	if err != nil {
		b.t.Fatal(err)
	}
	return src
}

// waitNote waits for the live note to say text.
func (b tab) waitNote(text string) {
	b.t.Helper()
	b.do("wait for the note "+strconv.Quote(text), chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const n = document.querySelector("[data-live-note]"); return !n.hidden && n.textContent.includes(%q); })()`, text),
		chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
}

// liveOf fetches src, /live with the overview's parameters, and checks that
// it lists listed queues and counts the omitted and filtered ones, in at
// most 200 bytes a queue listed: it returns the queues.
func liveOf(t *testing.T, base, src string, listed, omitted, filtered int) []string {
	t.Helper()
	resp, err := http.Get(base + src)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", src, resp.StatusCode, err)
	}
	var c liveCounts
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("GET %s: %v", src, err)
	}
	if len(c.QueueStats) != listed || c.QueuesOmitted != omitted || c.QueuesFiltered != filtered || len(body) > 200*listed+500 {
		t.Fatalf("GET %s: %d queues, %d omitted, %d filtered, in %d bytes; want %d, %d and %d, in at most %d bytes",
			src, len(c.QueueStats), c.QueuesOmitted, c.QueuesFiltered, len(body), listed, omitted, filtered, 200*listed+500)
	}
	var out []string
	for _, q := range c.QueueStats {
		out = append(out, q.Queue)
	}
	return out
}

// rows are the queues of the overview's table, in order.
func (b tab) rows() []string {
	b.t.Helper()
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tr[data-queue]"), tr => tr.dataset.queue)`))
	if err != nil {
		b.t.Fatalf("read the overview's queues: %v", err)
	}
	return out
}

// sameSet reports whether a and b hold the same names.
func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}
