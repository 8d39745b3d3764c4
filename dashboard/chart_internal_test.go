package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

func TestNiceCeilReadsInRoundNumbers(t *testing.T) {
	for n, want := range map[int64]int64{0: 1, 1: 1, 2: 2, 3: 5, 6: 10, 11: 20, 410: 500, 1001: 2000, 5000: 5000} {
		if got := niceCeil(n); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", n, got, want)
		}
	}
}

// The bars stand on the x axis, the largest reaching no higher than the
// top of the plot, and a chart of a single job has no label twice.
func TestDrawChartScalesToThePeak(t *testing.T) {
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
	if len(c.Bars) != 60 || len(c.Bars[10].Segments) != 1 {
		t.Fatalf("%d bars, bar 10 of %d segments; want 60 and 1", len(c.Bars), len(c.Bars[10].Segments))
	}
	seg := c.Bars[10].Segments[0]
	if seg.Y != plotTop || seg.Y+seg.H != plotBottom || seg.Class != "ok" {
		t.Fatalf("the peak's segment %+v spans %v to %v, want %d to %d", seg, seg.Y, seg.Y+seg.H, plotTop, plotBottom)
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
