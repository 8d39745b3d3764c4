package dashboard

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// The throughput chart's geometry, in the units of its viewBox; the SVG
// scales to the width of the page.
const (
	chartWidth  = 720
	chartHeight = 150
	plotLeft    = 44 // room for the counts of the y axis
	plotRight   = chartWidth - 6
	plotTop     = 20               // room for what the y axis counts
	plotBottom  = chartHeight - 22 // room for the times of the x axis
)

// maxCharts bounds the charts one overview draws. Each is up to some
// 7 KB of SVG (a queue busy every minute): a page of every one of
// hundreds of busy queues would weigh megabytes, which ?refresh= would
// fetch again every few seconds. The busiest queues of the window are
// drawn, and each other one is named with a link to the overview with
// its chart drawn too (?chart=).
const maxCharts = 20

// maxChartNames bounds the queues the overview names below its charts:
// as many that ran jobs, and as many that ran none; ?queues=all names
// them all.
const maxChartNames = 20

// throughputData is the overview's charts, over the window chosen by
// ?window=, with links to the other windows, and the queues without a
// chart named below them.
type throughputData struct {
	Window  string
	Span    string // "the last hour", for the page's words
	Windows []link
	Current string // the href of the window shown
	// Charts are by name: the busiest queues', and the one asked for.
	Charts []chart
	// Ran are the other queues that ran jobs, the most first, each linking
	// to its chart; RanOmitted counts those not named.
	Ran        []ranLink
	RanOmitted int
	// Quiet names the queues that ran no job; QuietOmitted counts those
	// not named.
	Quiet        []string
	QuietOmitted int
	// Busy counts the queues that ran jobs in the window; Drawn, those
	// charted: fewer when more than maxCharts ran jobs.
	Busy, Drawn int
	// Chosen is the queue asked for (?chart=), charted whatever its jobs.
	Chosen string
	// All is the overview that names every queue (?queues=all).
	All string
}

// ranLink is a queue that ran jobs in the window without a chart drawn:
// Href is the overview with its chart.
type ranLink struct {
	Queue string
	Jobs  int64
	Href  string
}

// Shown reports whether the section has anything to show.
func (d throughputData) Shown() bool {
	return len(d.Charts)+len(d.Ran)+d.RanOmitted+len(d.Quiet)+d.QuietOmitted > 0
}

// QuietTotal counts the queues that ran no job, named or not.
func (d throughputData) QuietTotal() int { return len(d.Quiet) + d.QuietOmitted }

// chart is one queue's throughput as the template draws it: every
// coordinate computed here, every word escaped by the template. Empty is
// a queue that ran no job in the window, charted because it was asked for.
//
// A page charts 20 queues of 60 or 96 buckets each, so the bars are drawn
// in the plot's own units (Plot maps them: one bucket across, one job up,
// from the bottom left corner), each outcome's parts of every bar in one
// path, and a bucket without jobs not at all: the x axis shows its time.
// Each bucket with jobs has a slot as tall as the plot, drawn over the
// bars, whose hover text lists its outcomes.
type chart struct {
	Queue string
	Empty bool

	Desc   string // what the chart shows, in one sentence
	Unit   string // what the y axis counts, such as "per minute"
	Width  int
	Height int
	// Plot is the transform from the plot's units to the chart's.
	Plot string
	// Max is the count at the top of the y axis: the height of a slot.
	Max    int64
	Bars   []bar
	Paths  []outcomePath
	Grid   string // the path of the grid's lines, one at each y label
	YTicks []tick
	XTicks []tick
	// The plot's edges, for the axes.
	Left, Right, Top, Bottom float64
}

// bar is a bucket with jobs: its place from the left, in buckets, and
// its hover text.
type bar struct {
	Index int
	Title string
}

// outcomePath is one outcome's parts of every bar, as the d of an SVG
// path in the plot's units; Class names its colour in the stylesheet.
type outcomePath struct {
	Class, D string
}

// tick is a label on an axis at X or Y.
type tick struct {
	X, Y  float64
	Label string
}

// windowNames are the windows' words.
var windowNames = map[string]struct{ link, span string }{
	ops.WindowHour: {"Last hour", "the last hour"},
	ops.WindowDay:  {"Last 24 hours", "the last 24 hours"},
}

// chartLinks are what the throughput section's links keep of the page:
// its refresh, and what it lists (?reasons=, ?queues=, ?name=).
type chartLinks struct {
	Refresh               int
	Reasons, Queues, Name string
}

// chartParams are the parameters of u the throughput section's links
// keep.
func chartParams(u *url.URL, refresh int) chartLinks {
	q := u.Query()
	return chartLinks{Refresh: refresh, Reasons: q.Get("reasons"), Queues: q.Get("queues"), Name: strings.TrimSpace(q.Get("name"))}
}

// href is the overview over window with queue's chart drawn.
func (l chartLinks) href(window, queue string) string {
	return pageLink("/", "window", window, "chart", queue, "refresh", l.Refresh, "reasons", l.Reasons, "queues", l.Queues, "name", l.Name)
}

// throughputView lays out the charts of res, which ops bounded to the
// busiest queues and the one chosen (?chart=), and names the other
// queues; the links keep the page's parameters, those to the other
// windows the chart chosen too.
func throughputView(res ops.ThroughputResult, l chartLinks, chosen string) throughputData {
	d := throughputData{Window: res.Window, Span: windowNames[res.Window].span, Chosen: chosen, Busy: res.Busy(),
		RanOmitted: res.RanOmitted, Quiet: res.Quiet, QuietOmitted: res.QuietOmitted}
	for _, w := range ops.ThroughputWindows {
		href := l.href(w, chosen)
		d.Windows = append(d.Windows, link{Href: href, Text: windowNames[w].link})
		if w == res.Window {
			d.Current = href
		}
	}
	for _, q := range res.Queues {
		d.Charts = append(d.Charts, drawChart(res, q, d.Span))
		if !q.Empty() {
			d.Drawn++
		}
	}
	for _, q := range res.Ran {
		d.Ran = append(d.Ran, ranLink{Queue: q.Queue, Jobs: q.Jobs, Href: l.href(res.Window, q.Queue) + "#chart-" + q.Queue})
	}
	return d
}

// drawChart computes the bars and axes of one queue's chart.
func drawChart(res ops.ThroughputResult, q ops.QueueThroughput, span string) chart {
	c := chart{Queue: q.Queue, Empty: q.Empty(), Width: chartWidth, Height: chartHeight,
		Left: plotLeft, Right: plotRight, Top: plotTop, Bottom: plotBottom, Unit: "per minute"}
	if c.Empty {
		return c
	}
	minutes := res.BucketMinutes()
	if minutes > 1 {
		c.Unit = fmt.Sprintf("per %d minutes", minutes)
	}
	t := q.Total
	c.Desc = fmt.Sprintf("%s: %s completed, %s retried, %s dead, %s discarded in %s; peak %s/min at %s UTC.",
		q.Queue, num(t.Succeeded), num(t.Retried), num(t.DeadLettered), num(t.Discarded), span,
		perMinute(q.PeakPerMinute), q.Peak.Start.UTC().Format("15:04"))

	c.Max = niceCeil(q.Peak.Total())
	scale := (plotBottom - plotTop) / float64(c.Max)
	slot := float64(plotRight-plotLeft) / float64(len(q.Buckets))
	c.Plot = fmt.Sprintf("translate(%d %d) scale(%s %s)", plotLeft, plotBottom,
		strconv.FormatFloat(slot, 'g', 6, 64), strconv.FormatFloat(-scale, 'g', 6, 64))
	c.Bars, c.Paths = drawBars(q.Buckets, minutes)
	for i, b := range q.Buckets {
		if label, ok := xLabel(b.Start, minutes); ok {
			c.XTicks = append(c.XTicks, tick{X: round2(plotLeft + float64(i)*slot), Y: plotBottom + 15, Label: label})
		}
	}
	var grid strings.Builder
	for _, v := range []int64{0, c.Max / 2, c.Max} {
		if v == 0 && len(c.YTicks) > 0 {
			continue // the middle of an axis up to 1
		}
		y := round2(plotBottom - float64(v)*scale)
		// The label's baseline is below its line, so that the line
		// meets the middle of its digits.
		c.YTicks = append(c.YTicks, tick{X: plotLeft - 6, Y: y + 4, Label: num(v)})
		fmt.Fprintf(&grid, "M%d %sH%d", plotLeft, coord(y), plotRight)
	}
	c.Grid = grid.String()
	return c
}

// barGap is the space between two bars, in buckets.
const barGap = 0.1

// drawBars lays out the buckets with jobs: their hover texts, and each
// outcome's parts of them, stacked bottom up in the order of the legend,
// as one path an outcome.
func drawBars(buckets []ops.ThroughputBucket, minutes int) ([]bar, []outcomePath) {
	classes := []string{"ok", "retried", "dead", "discarded"}
	paths := make([]strings.Builder, len(classes))
	var bars []bar
	for i, b := range buckets {
		if b.Total() == 0 {
			continue
		}
		bars = append(bars, bar{Index: i, Title: barTitle(b, minutes)})
		var y int64
		for k, n := range []int64{b.Succeeded, b.Retried, b.DeadLettered, b.Discarded} {
			if n == 0 {
				continue
			}
			fmt.Fprintf(&paths[k], "M%s %dh%sv%dh-%sz", coord(float64(i)+barGap/2), y, coord(1-barGap), n, coord(1-barGap))
			y += n
		}
	}
	var out []outcomePath
	for k, p := range paths {
		if p.Len() > 0 {
			out = append(out, outcomePath{Class: classes[k], D: p.String()})
		}
	}
	return bars, out
}

// barTitle is the hover text of a bucket with jobs: its time and the
// outcomes it has, such as "14:05 UTC: 12 completed, 1 retried".
func barTitle(b ops.ThroughputBucket, minutes int) string {
	when := b.Start.UTC().Format("15:04")
	if minutes > 1 {
		when += "–" + b.Start.Add(time.Duration(minutes)*time.Minute).UTC().Format("15:04")
	}
	var parts []string
	for _, p := range []struct {
		n    int64
		word string
	}{{b.Succeeded, "completed"}, {b.Retried, "retried"}, {b.DeadLettered, "dead"}, {b.Discarded, "discarded"}} {
		if p.n > 0 {
			parts = append(parts, num(p.n)+" "+p.word)
		}
	}
	return when + " UTC: " + strings.Join(parts, ", ")
}

// coord writes a coordinate as short as it reads: 4 digits after the
// point at most, none when whole, and no 0 before the point (".9").
func coord(f float64) string {
	s := strconv.FormatFloat(math.Round(f*1e4)/1e4, 'f', -1, 64)
	if rest, ok := strings.CutPrefix(s, "0."); ok {
		return "." + rest
	}
	if rest, ok := strings.CutPrefix(s, "-0."); ok {
		return "-." + rest
	}
	return s
}

// xLabel is the label of the x axis at a bucket's start, if it has one:
// every quarter hour in a chart of minutes, every four hours in one of
// longer buckets.
func xLabel(start time.Time, minutes int) (string, bool) {
	start = start.UTC()
	if minutes == 1 && start.Minute()%15 == 0 || minutes > 1 && start.Minute() == 0 && start.Hour()%4 == 0 {
		return start.Format("15:04"), true
	}
	return "", false
}

// niceCeil is the top of a y axis for a largest value n: the next 1, 2 or
// 5 times a power of ten, so that the axis reads in round numbers.
func niceCeil(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
	}
}

// perMinute writes a rate: whole when it is, else to one decimal.
func perMinute(f float64) string {
	if f == math.Trunc(f) {
		return num(int64(f))
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
