package dashboard

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
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
// busiest queues of the window are drawn, and each other one links to the
// overview with its chart drawn too (?chart=).
const maxCharts = 20

// throughputData is the overview's charts: one per queue, over the window
// chosen by ?window=, with links to the other windows.
type throughputData struct {
	Window  string
	Span    string // "the last hour", for the page's words
	Windows []link
	Current string // the href of the window shown
	Charts  map[string]chart
	// Queues names every queue, by name: the order of the charts.
	Queues []string
	// Busy counts the queues that ran jobs in the window; Drawn, those
	// charted: fewer when more than maxCharts ran jobs.
	Busy, Drawn int
}

// Chart is the chart of queue, or an empty one (its Empty set) for a queue
// the operation did not return.
func (d throughputData) Chart(queue string) chart {
	if c, ok := d.Charts[queue]; ok {
		return c
	}
	return chart{Queue: queue, Empty: true}
}

// chart is one queue's throughput as the template draws it: every
// coordinate computed here, every word escaped by the template.
type chart struct {
	Queue string
	Empty bool
	// Skipped is a queue that ran Jobs in the window but is not among the
	// busiest, which alone are drawn; Href is the overview with its chart.
	Skipped bool
	Jobs    int64
	Href    string

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

// throughputView lays out the charts of res: of the maxCharts busiest
// queues, and of the queue chosen (?chart=); refresh keeps the page's
// auto-refresh in its links, as chosen does in those to the other windows.
func throughputView(res ops.ThroughputResult, refresh int, chosen string) throughputData {
	d := throughputData{Window: res.Window, Span: windowNames[res.Window].span, Charts: map[string]chart{}}
	for _, w := range ops.ThroughputWindows {
		href := pageLink("/", "window", w, "chart", chosen, "refresh", refresh)
		d.Windows = append(d.Windows, link{Href: href, Text: windowNames[w].link})
		if w == res.Window {
			d.Current = href
		}
	}
	drawn := busiest(res.Queues, chosen)
	for _, q := range res.Queues {
		d.Queues = append(d.Queues, q.Queue)
		if !q.Empty() {
			d.Busy++
		}
		if q.Empty() || drawn[q.Queue] {
			d.Charts[q.Queue] = drawChart(res, q, d.Span)
			continue
		}
		d.Charts[q.Queue] = chart{Queue: q.Queue, Skipped: true, Jobs: q.Total.Total(),
			Href: pageLink("/", "window", res.Window, "chart", q.Queue, "refresh", refresh) + "#chart-" + q.Queue}
	}
	d.Drawn = len(drawn)
	return d
}

// busiest names the queues of qs to chart: the maxCharts that ran the most
// jobs (by name among equals), and chosen when it ran any.
func busiest(qs []ops.QueueThroughput, chosen string) map[string]bool {
	var ran []ops.QueueThroughput
	for _, q := range qs {
		if !q.Empty() {
			ran = append(ran, q)
		}
	}
	slices.SortStableFunc(ran, func(a, b ops.QueueThroughput) int {
		return cmp.Or(cmp.Compare(b.Total.Total(), a.Total.Total()), cmp.Compare(a.Queue, b.Queue))
	})
	out := map[string]bool{}
	for i, q := range ran {
		if i < maxCharts || q.Queue == chosen {
			out[q.Queue] = true
		}
	}
	return out
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
