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

// maxCharts bounds the charts one overview draws. Each is some 15 KB of
// SVG: a page of every one of hundreds of busy queues would weigh
// megabytes, which ?refresh= would fetch again every few seconds. The
// busiest queues of the window are drawn, and each other one is named
// with a link to the overview with its chart drawn too (?chart=).
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
type chart struct {
	Queue string
	Empty bool

	Desc   string // what the chart shows, in one sentence
	Unit   string // what the y axis counts, such as "per minute"
	Width  int
	Height int
	Bars   []bar
	YTicks []tick
	XTicks []tick
	// The plot's edges, for the axes.
	Left, Right, Top, Bottom float64
}

// PlotHeight is the height of the plot, where the bars stand.
func (c chart) PlotHeight() float64 { return c.Bottom - c.Top }

// bar is one bucket: a slot as wide as the bucket, for its hover title, and
// its outcomes stacked bottom up.
type bar struct {
	X, W     float64
	Start    time.Time
	Total    int64
	Title    string
	Segments []segment
}

// segment is one outcome's part of a bar; Class names its colour in the
// stylesheet.
type segment struct {
	Class   string
	X, Y, W float64
	H       float64
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

	top := niceCeil(q.Peak.Total())
	scale := (plotBottom - plotTop) / float64(top)
	slot := float64(plotRight-plotLeft) / float64(len(q.Buckets))
	gap := math.Min(1, slot/5)
	for i, b := range q.Buckets {
		x := plotLeft + float64(i)*slot
		br := bar{X: round2(x), W: round2(slot), Start: b.Start, Total: b.Total(),
			Title: fmt.Sprintf("%s–%s UTC: %s completed, %s retried, %s dead, %s discarded",
				b.Start.UTC().Format("15:04"), b.Start.Add(time.Duration(minutes)*time.Minute).UTC().Format("15:04"),
				num(b.Succeeded), num(b.Retried), num(b.DeadLettered), num(b.Discarded))}
		y := float64(plotBottom)
		for _, part := range []struct {
			class string
			n     int64
		}{{"ok", b.Succeeded}, {"retried", b.Retried}, {"dead", b.DeadLettered}, {"discarded", b.Discarded}} {
			if part.n == 0 {
				continue
			}
			h := float64(part.n) * scale
			y -= h
			br.Segments = append(br.Segments, segment{Class: part.class, X: round2(x + gap/2), W: round2(slot - gap), Y: round2(y), H: round2(h)})
		}
		c.Bars = append(c.Bars, br)
		if label, ok := xLabel(b.Start, minutes); ok {
			c.XTicks = append(c.XTicks, tick{X: round2(x), Y: plotBottom + 15, Label: label})
		}
	}
	for _, v := range []int64{0, top / 2, top} {
		if v == 0 && len(c.YTicks) > 0 {
			continue // the middle of an axis up to 1
		}
		c.YTicks = append(c.YTicks, tick{X: plotLeft - 6, Y: round2(plotBottom - float64(v)*scale), Label: num(v)})
	}
	return c
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
