package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

var (
	barRE   = regexp.MustCompile(`<rect x="(\d+)" width="1" height="\d+"><title>([^<]*)</title></rect>`)
	countRE = regexp.MustCompile(`([\d,]+) (?:completed|retried|dead|discarded)`)
	descRE  = regexp.MustCompile(`<desc id="tp-\d+-d">([^<]*)</desc>`)
)

// figure returns the throughput figure of queue on page.
func figure(t *testing.T, page, queue string) string {
	t.Helper()
	start := strings.Index(page, `<figure class="chart" data-queue="`+queue+`"`)
	if start < 0 {
		t.Fatalf("the overview has no throughput figure for %s:\n%s", queue, page)
	}
	end := strings.Index(page[start:], "</figure>")
	if end < 0 {
		t.Fatalf("the figure of %s does not end", queue)
	}
	return page[start : start+end]
}

// chartFacts are the bars of a figure's chart (the buckets with jobs),
// the hover text of its largest one and its description.
func chartFacts(t *testing.T, fig string) (bars int, largest, desc string) {
	t.Helper()
	if !strings.Contains(fig, `<svg class="tp"`) || !strings.Contains(fig, `role="img"`) {
		t.Fatalf("the figure has no chart:\n%s", fig)
	}
	var most int64 = -1
	for _, m := range barRE.FindAllStringSubmatch(fig, -1) {
		bars++
		var n int64
		for _, c := range countRE.FindAllStringSubmatch(m[2], -1) {
			v, err := strconv.ParseInt(strings.ReplaceAll(c[1], ",", ""), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			n += v
		}
		if n == 0 {
			t.Fatalf("a bar of no jobs is drawn: %q", m[2])
		}
		if n > most {
			most, largest = n, html.UnescapeString(m[2])
		}
	}
	d := descRE.FindStringSubmatch(fig)
	if d == nil {
		t.Fatalf("the chart has no description:\n%s", fig)
	}
	return bars, largest, html.UnescapeString(d[1])
}

// The overview draws each queue's outcomes per minute over the last hour,
// or per quarter hour over the last day, from the workers' counters: a bar
// for each bucket with jobs, whose hover text counts them, and none for
// the others; the queues without any are named in one line, without a
// figure each.
func TestOverviewThroughputCharts(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	busy, quiet := pgtest.NewQueue(t, st, "dash_busy"), pgtest.NewQueue(t, st, "dash_quiet")
	now := time.Now().UTC()
	peakHour := now.Add(-10 * time.Minute).Truncate(time.Minute)
	peakDay := now.Add(-3 * time.Hour).Truncate(time.Minute)
	err := st.AddStats(pgtest.Context(t), []store.StatsDelta{
		{Minute: peakHour, Queue: busy, Kind: "a", Succeeded: 300, Retried: 10},
		{Minute: peakHour, Queue: busy, Kind: "b", Succeeded: 100},
		{Minute: now.Add(-20 * time.Minute), Queue: busy, Kind: "a", Succeeded: 7, DeadLettered: 3},
		{Minute: peakDay, Queue: busy, Kind: "a", Succeeded: 1000},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))

	code, page, _ := b.get("/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	bars, largest, desc := chartFacts(t, figure(t, page, busy))
	if want := peakHour.Format("15:04") + " UTC: 400 completed, 10 retried"; bars != 2 || largest != want {
		t.Fatalf("the hour's chart has %d bars, the largest %q; want 2, the largest %q", bars, largest, want)
	}
	want := fmt.Sprintf("%s: 407 completed, 10 retried, 3 dead, 0 discarded in the last hour; peak 410/min at %s UTC.", busy, peakHour.Format("15:04"))
	if desc != want {
		t.Fatalf("the hour's chart says %q, want %q", desc, want)
	}
	if !strings.Contains(page, `<a href="/?window=1h" aria-current="page">Last hour</a>`) || !strings.Contains(page, `<a href="/?window=24h">Last 24 hours</a>`) {
		t.Fatalf("the overview does not link the windows, the hour marked as shown:\n%s", page)
	}
	quietLine(t, page, "the last hour", quiet)

	code, page, _ = b.get("/?window=24h")
	if code != http.StatusOK {
		t.Fatalf("GET /?window=24h: %d\n%s", code, page)
	}
	quarter := peakDay.Truncate(15 * time.Minute)
	quarters := map[time.Time]bool{quarter: true, peakHour.Truncate(15 * time.Minute): true, now.Add(-20 * time.Minute).Truncate(15 * time.Minute): true}
	bars, largest, desc = chartFacts(t, figure(t, page, busy))
	if want := quarter.Format("15:04") + "–" + quarter.Add(15*time.Minute).Format("15:04") + " UTC: 1,000 completed"; bars != len(quarters) || largest != want {
		t.Fatalf("the day's chart has %d bars, the largest %q; want %d, the largest %q", bars, largest, len(quarters), want)
	}
	want = fmt.Sprintf("%s: 1,407 completed, 10 retried, 3 dead, 0 discarded in the last 24 hours; peak 66.7/min at %s UTC.", busy, quarter.Format("15:04"))
	if desc != want {
		t.Fatalf("the day's chart says %q, want %q", desc, want)
	}
	if !strings.Contains(page, `<a href="/?window=24h" aria-current="page">Last 24 hours</a>`) {
		t.Fatal("the day's overview does not mark its window as shown")
	}
	quietLine(t, page, "the last 24 hours", quiet)
}

// quietLine checks that page charts one queue and names the quiet ones in
// one line, which says they ran no jobs in span.
func quietLine(t *testing.T, page, span string, quiet ...string) {
	t.Helper()
	if n := strings.Count(page, `<figure class="chart"`); n != 1 {
		t.Fatalf("the overview has %d throughput figures, want the busy queue's alone:\n%s", n, page)
	}
	var names []string
	for _, q := range quiet {
		names = append(names, `<span class="qname">`+q+`</span>`)
	}
	want := `<p class="more" data-names="quiet">No jobs ran in ` + span + ` in ` + strings.Join(names, ", ") + `.</p>`
	if !strings.Contains(page, want) {
		t.Fatalf("the overview does not name the quiet queues as %s:\n%s", want, page)
	}
}

// A window the dashboard does not offer is refused with the ones it does.
func TestOverviewRefusesAnUnknownWindow(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/?window=7d")
	if code != http.StatusBadRequest {
		t.Fatalf("GET /?window=7d: %d, want 400\n%s", code, page)
	}
	for _, want := range []string{"window &#34;7d&#34; is not offered", `href="/?window=1h"`, `href="/?window=24h"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the refusal does not say %s:\n%s", want, page)
		}
	}
}

// With more busy queues than it charts, the overview draws the busiest
// only, so that a page of hundreds of queues stays small; it names each
// other one with a link to the overview with its chart drawn too, and a
// chart of no queue is refused.
func TestOverviewChartsTheBusiestQueues(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	minute := time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Minute)
	var deltas []store.StatsDelta
	var queues []string
	for i := range 22 {
		q := pgtest.NewQueue(t, st, "dash_many")
		queues = append(queues, q)
		deltas = append(deltas, store.StatsDelta{Minute: minute, Queue: q, Kind: "k", Succeeded: int64(100 + i)})
	}
	if err := st.AddStats(pgtest.Context(t), deltas); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))

	code, page, _ := b.get("/?refresh=30")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	if n := strings.Count(page, `<svg class="tp"`); n != 20 {
		t.Fatalf("the overview of 22 busy queues draws %d charts, want the 20 busiest", n)
	}
	if !strings.Contains(page, "20 of the 22 queues that ran jobs in the last hour are charted") {
		t.Fatalf("the overview does not say that it charts only the busiest:\n%s", page)
	}
	for _, q := range queues[2:] {
		chartFacts(t, figure(t, page, q))
	}
	quiet := queues[0]
	link := html.EscapeString("/?window=1h&chart=" + quiet + "&refresh=30#chart-" + quiet)
	other := html.EscapeString("/?window=1h&chart=" + queues[1] + "&refresh=30#chart-" + queues[1])
	want := `<p class="more" data-names="ran">Also ran jobs in the last hour: <a href="` + other + `" class="qname">` + queues[1] + `</a> (101 jobs), <a href="` + link + `" class="qname">` + quiet + `</a> (100 jobs).</p>`
	if n := strings.Count(page, `<figure class="chart"`); n != 20 || !strings.Contains(page, want) {
		t.Fatalf("the overview has %d throughput figures, and does not name the 2 queues not among the busiest as %s:\n%s", n, want, page)
	}

	code, page, _ = b.get(html.UnescapeString(link))
	if code != http.StatusOK || strings.Count(page, `<svg class="tp"`) != 21 {
		t.Fatalf("GET %s: %d, %d charts; want the 20 busiest and %s\n%s", link, code, strings.Count(page, `<svg class="tp"`), quiet, page)
	}
	chartFacts(t, figure(t, page, quiet))
	if !strings.Contains(page, `href="`+html.EscapeString("/?window=24h&chart="+quiet+"&refresh=30")+`"`) {
		t.Fatalf("the link to the day's window does not keep the chart asked for:\n%s", page)
	}

	code, page, _ = b.get("/?chart=no_such_queue")
	if code != http.StatusNotFound || !strings.Contains(page, "There is no queue &#34;no_such_queue&#34; to chart") {
		t.Fatalf("GET /?chart=no_such_queue: %d, want 404 saying so\n%s", code, page)
	}
}
