package dashboard

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

func TestNiceCeilReadsInRoundNumbers(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]int64{0: 1, 1: 1, 2: 2, 3: 5, 6: 10, 11: 20, 410: 500, 1001: 2000, 5000: 5000} {
		if got := niceCeil(n); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", n, got, want)
		}
	}
}

// The bars stand on the x axis, the largest reaching no higher than the
// top of the plot; a bucket without jobs is not drawn, and a chart of a
// single job has no label twice.
func TestDrawChartScalesToThePeak(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 13, 50, 0, 0, time.UTC)
	q := ops.QueueThroughput{Queue: "orders", Buckets: make([]ops.ThroughputBucket, 60)}
	for i := range q.Buckets {
		q.Buckets[i].Start = start.Add(time.Duration(i) * time.Minute)
	}
	q.Buckets[10].Outcomes = ops.Outcomes{Succeeded: 1}
	q.Total = q.Buckets[10].Outcomes
	p := q.Buckets[10]
	q.Peak, q.PeakPerMinute = &p, 1
	c := drawChart(ops.ThroughputResult{Window: ops.WindowHour, BucketSeconds: 60}, q, "the last hour")
	if len(c.Bars) != 1 || c.Bars[0] != (bar{Index: 10, Title: "14:00 UTC: 1 completed"}) {
		t.Fatalf("bars %+v, want the one of 14:00 alone", c.Bars)
	}
	// One bucket across, one job up, from the bottom left corner: the
	// peak's job is as tall as the plot.
	if want := fmt.Sprintf("translate(%d %d) scale(11.1667 -%d)", plotLeft, plotBottom, plotBottom-plotTop); c.Plot != want || c.Max != 1 {
		t.Fatalf("the plot is %q up to %d, want %q up to 1", c.Plot, c.Max, want)
	}
	if want := []outcomePath{{Class: "ok", D: "M10.05 0h.9v1h-.9z"}}; !slices.Equal(c.Paths, want) {
		t.Fatalf("paths %+v, want %+v", c.Paths, want)
	}
	if len(c.YTicks) != 2 || c.YTicks[0].Label != "0" || c.YTicks[1].Label != "1" {
		t.Fatalf("y labels %+v, want 0 and 1", c.YTicks)
	}
	var labels []string
	for _, x := range c.XTicks {
		labels = append(labels, x.Label)
	}
	if want := "14:00 14:15 14:30 14:45"; fmt.Sprint(labels) != "["+want+"]" {
		t.Fatalf("x labels %v, want %s", labels, want)
	}
}

// A bar's parts stack bottom up in the order of the legend, each in its
// outcome's path; its hover text names the outcomes it has, over its
// quarter hour in a chart of the day.
func TestDrawChartStacksOutcomes(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	q := ops.QueueThroughput{Queue: "orders", Buckets: make([]ops.ThroughputBucket, 96)}
	for i := range q.Buckets {
		q.Buckets[i].Start = start.Add(time.Duration(i) * 15 * time.Minute)
	}
	q.Buckets[3].Outcomes = ops.Outcomes{Succeeded: 1200, DeadLettered: 2, Discarded: 1}
	q.Buckets[4].Outcomes = ops.Outcomes{Retried: 7}
	q.Total = ops.Outcomes{Succeeded: 1200, Retried: 7, DeadLettered: 2, Discarded: 1}
	p := q.Buckets[3]
	q.Peak, q.PeakPerMinute = &p, 80.2
	c := drawChart(ops.ThroughputResult{Window: ops.WindowDay, BucketSeconds: 900}, q, "the last 24 hours")
	want := []bar{{Index: 3, Title: "00:45–01:00 UTC: 1,200 completed, 2 dead, 1 discarded"}, {Index: 4, Title: "01:00–01:15 UTC: 7 retried"}}
	if !slices.Equal(c.Bars, want) {
		t.Fatalf("bars %+v, want %+v", c.Bars, want)
	}
	paths := []outcomePath{{"ok", "M3.05 0h.9v1200h-.9z"}, {"retried", "M4.05 0h.9v7h-.9z"},
		{"dead", "M3.05 1200h.9v2h-.9z"}, {"discarded", "M3.05 1202h.9v1h-.9z"}}
	if !slices.Equal(c.Paths, paths) || c.Max != 2000 {
		t.Fatalf("paths %+v up to %d, want %+v up to 2000", c.Paths, c.Max, paths)
	}
}
