package ops_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// throughputFixture counts known outcomes for a new queue around a pinned
// clock and returns the queue, a quiet queue, the service on that clock and
// the top of the hour the counts are placed around.
func throughputFixture(t *testing.T) (q, quiet string, svc *ops.Service, hour time.Time) {
	t.Helper()
	s, ctx := testStore(t), testContext(t)
	q, quiet = newQueue(t, s, nil), newQueue(t, s, nil)
	// Hours ago, within the counters' retention: no worker counts there.
	hour = time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	now := hour.Add(30*time.Minute + 20*time.Second)
	at := func(d time.Duration) time.Time { return hour.Add(d) }
	err := s.AddStats(ctx, []store.StatsDelta{
		{Minute: at(-30 * time.Minute), Queue: q, Kind: "a", Succeeded: 999}, // an hour before the last minute
		{Minute: at(-29 * time.Minute), Queue: q, Kind: "a", DeadLettered: 2},
		{Minute: at(0), Queue: q, Kind: "a", Succeeded: 300, Retried: 10},
		{Minute: at(0), Queue: q, Kind: "b", Succeeded: 100, Snoozed: 50},
		{Minute: at(30 * time.Minute), Queue: q, Kind: "a", Succeeded: 5, Discarded: 1},
		{Minute: at(time.Hour), Queue: q, Kind: "a", Succeeded: 777}, // after now
	})
	if err != nil {
		t.Fatal(err)
	}
	return q, quiet, newService(t, s, ops.Options{Now: func() time.Time { return now }}), hour
}

func TestThroughputLastHourByMinute(t *testing.T) {
	t.Parallel()
	q, _, svc, hour := throughputFixture(t)
	res, err := svc.Throughput(testContext(t), ops.ThroughputRequest{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if res.Window != ops.WindowHour || res.BucketSeconds != 60 || len(res.Queues) != 1 {
		t.Fatalf("window %q of %d s with %d queues, want 1h of 60 s with one", res.Window, res.BucketSeconds, len(res.Queues))
	}
	if want := hour.Add(-29 * time.Minute); !res.From.Equal(want) || !res.Until.Equal(hour.Add(31*time.Minute)) {
		t.Fatalf("from %s until %s, want %s until %s", res.From, res.Until, want, hour.Add(31*time.Minute))
	}
	qt := res.Queues[0]
	want := map[int]ops.Outcomes{
		0:  {DeadLettered: 2},
		29: {Succeeded: 400, Retried: 10},
		59: {Succeeded: 5, Discarded: 1},
	}
	checkBuckets(t, qt, 60, time.Minute, res.From, want)
	if total := (ops.Outcomes{Succeeded: 405, Retried: 10, DeadLettered: 2, Discarded: 1}); qt.Total != total {
		t.Fatalf("total = %+v, want %+v", qt.Total, total)
	}
	if qt.Peak == nil || !qt.Peak.Start.Equal(hour) || qt.PeakPerMinute != 410 || qt.Empty() {
		t.Fatalf("peak %+v at %v per minute, want 410 at %s", qt.Peak, qt.PeakPerMinute, hour)
	}
}

func TestThroughputLastDayByQuarterHour(t *testing.T) {
	t.Parallel()
	q, _, svc, hour := throughputFixture(t)
	res, err := svc.Throughput(testContext(t), ops.ThroughputRequest{Queue: q, Window: ops.WindowDay})
	if err != nil {
		t.Fatal(err)
	}
	if res.BucketSeconds != 15*60 || res.BucketMinutes() != 15 || !res.Until.Equal(hour.Add(45*time.Minute)) {
		t.Fatalf("buckets of %d s until %s, want 900 s until %s", res.BucketSeconds, res.Until, hour.Add(45*time.Minute))
	}
	if want := hour.Add(45*time.Minute - 24*time.Hour); !res.From.Equal(want) {
		t.Fatalf("from %s, want %s", res.From, want)
	}
	qt := res.Queues[0]
	checkBuckets(t, qt, 96, 15*time.Minute, res.From, map[int]ops.Outcomes{
		91: {Succeeded: 999, DeadLettered: 2},
		93: {Succeeded: 400, Retried: 10},
		95: {Succeeded: 5, Discarded: 1},
	})
	if qt.Peak == nil || !qt.Peak.Start.Equal(hour.Add(-30*time.Minute)) || qt.PeakPerMinute != 1001.0/15 {
		t.Fatalf("peak %+v at %v per minute, want 1001/15 at %s", qt.Peak, qt.PeakPerMinute, hour.Add(-30*time.Minute))
	}
}

// Of every queue, each is returned; one without counters is empty, with
// every bucket still present.
func TestThroughputOfEveryQueue(t *testing.T) {
	t.Parallel()
	q, quiet, svc, _ := throughputFixture(t)
	res, err := svc.Throughput(testContext(t), ops.ThroughputRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ops.QueueThroughput{}
	for i, qt := range res.Queues {
		if i > 0 && res.Queues[i-1].Queue >= qt.Queue {
			t.Fatalf("queues out of order: %s before %s", res.Queues[i-1].Queue, qt.Queue)
		}
		got[qt.Queue] = qt
	}
	if got[q].Total.Succeeded != 405 || got[q].Empty() {
		t.Fatalf("%s: %+v, want 405 succeeded", q, got[q].Total)
	}
	if qt, ok := got[quiet]; !ok || !qt.Empty() || qt.Peak != nil || len(qt.Buckets) != 60 || qt.Total != (ops.Outcomes{}) {
		t.Fatalf("the quiet queue %s: present %v, %+v", quiet, ok, qt)
	}
}

func TestThroughputRefusesBadInput(t *testing.T) {
	t.Parallel()
	q, _, svc, _ := throughputFixture(t)
	ctx := testContext(t)
	for _, c := range []struct {
		req  ops.ThroughputRequest
		kind error
		says string
	}{
		{ops.ThroughputRequest{Queue: q, Window: "2h"}, ops.ErrInvalid, "pass 1h for the last hour"},
		{ops.ThroughputRequest{Window: "1d"}, ops.ErrInvalid, "24h for the last day"},
		{ops.ThroughputRequest{Queue: q + "_dlq"}, ops.ErrInvalid, "dead-letter queue of " + q},
		{ops.ThroughputRequest{Queue: "nosuchqueue_tp"}, ops.ErrNotFound, `queue "nosuchqueue_tp" does not exist`},
		{ops.ThroughputRequest{Queue: `x"; DROP TABLE pgmq.meta; --`}, ops.ErrInvalid, ""},
		{ops.ThroughputRequest{Window: "1h\x00"}, ops.ErrInvalid, "window cannot be used"},
	} {
		_, err := svc.Throughput(ctx, c.req)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Throughput(%+v) = %v, want %v saying %q", c.req, err, c.kind, c.says)
		}
	}
}

// checkBuckets asserts qt has n buckets of step from first, each zero but
// those of want.
func checkBuckets(t *testing.T, qt ops.QueueThroughput, n int, step time.Duration, first time.Time, want map[int]ops.Outcomes) {
	t.Helper()
	if len(qt.Buckets) != n {
		t.Fatalf("%d buckets, want %d", len(qt.Buckets), n)
	}
	for i, b := range qt.Buckets {
		if start := first.Add(time.Duration(i) * step); !b.Start.Equal(start) {
			t.Fatalf("bucket %d starts at %s, want %s", i, b.Start, start)
		}
		if b.Outcomes != want[i] {
			t.Errorf("bucket %d (%s) = %+v, want %+v", i, b.Start.Format("15:04"), b.Outcomes, want[i])
		}
	}
}

// TestThroughputBoundsItsSeries: bounded for a page, the throughput of
// every queue has the series of the queues that ran the most jobs and of
// the one asked for, by name; it names the other busy ones, the most jobs
// first, and the quiet ones, by name, up to a bound, and counts the rest;
// a name keeps only the queues that contain it.
func TestThroughputBoundsItsSeries(t *testing.T) {
	t.Parallel()
	s, ctx := isolatedStore(t), testContext(t)
	svc := newService(t, s, ops.Options{})
	busy := map[string]int64{"tb_busy_a": 5, "tb_busy_b": 9, "tb_busy_c": 7, "tb_busy_d": 1, "tb_busy_e": 7}
	minute := time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Minute)
	var deltas []store.StatsDelta
	for q, n := range busy {
		pgtest.CreateQueue(t, s, q)
		deltas = append(deltas, store.StatsDelta{Minute: minute, Queue: q, Kind: "k", Succeeded: n})
	}
	for _, q := range []string{"tb_quiet_a", "tb_quiet_b", "tb_quiet_c", "other_quiet"} {
		pgtest.CreateQueue(t, s, q)
	}
	if err := s.AddStats(ctx, deltas); err != nil {
		t.Fatal(err)
	}
	series := func(res ops.ThroughputResult) []string {
		var out []string
		for _, q := range res.Queues {
			out = append(out, q.Queue)
		}
		return out
	}

	all, err := svc.Throughput(ctx, ops.ThroughputRequest{})
	if err != nil || len(all.Queues) != 9 || all.Ran != nil || all.Quiet != nil || all.Busy() != 5 {
		t.Fatalf("unbounded: series %v, ran %v, quiet %v, %d busy, %v; want every queue's series and 5 busy", series(all), all.Ran, all.Quiet, all.Busy(), err)
	}
	res, err := svc.Throughput(ctx, ops.ThroughputRequest{MaxQueues: 2, MaxNames: 2, Chart: "tb_quiet_c"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := series(res), []string{"tb_busy_b", "tb_busy_c", "tb_quiet_c"}; !slices.Equal(got, want) {
		t.Fatalf("bounded to 2 series and the chart asked for: %v, want %v", got, want)
	}
	if want := []ops.QueueJobs{{Queue: "tb_busy_e", Jobs: 7}, {Queue: "tb_busy_a", Jobs: 5}}; !slices.Equal(res.Ran, want) || res.RanOmitted != 1 || res.Busy() != 5 {
		t.Fatalf("the other busy queues: %v and %d more, %d busy; want %v and 1 more, 5 busy", res.Ran, res.RanOmitted, res.Busy(), want)
	}
	if want := []string{"other_quiet", "tb_quiet_a"}; !slices.Equal(res.Quiet, want) || res.QuietOmitted != 1 {
		t.Fatalf("the quiet queues: %v and %d more; want %v and 1 more", res.Quiet, res.QuietOmitted, want)
	}

	res, err = svc.Throughput(ctx, ops.ThroughputRequest{MaxQueues: 1, QueueNameContains: "quiet", Chart: "tb_busy_d"})
	if err != nil {
		t.Fatal(err)
	}
	if got := series(res); !slices.Equal(got, []string{"tb_busy_d"}) || res.Ran != nil || len(res.Quiet) != 4 || res.QuietOmitted != 0 || res.Filtered != 4 {
		t.Fatalf("the queues named *quiet*: series %v, ran %v, quiet %v (%d more), %d filtered; want the chart asked for, the 4 quiet ones and 4 filtered",
			got, res.Ran, res.Quiet, res.QuietOmitted, res.Filtered)
	}
	if _, err := svc.Throughput(ctx, ops.ThroughputRequest{MaxNames: -1}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("a negative bound: %v, want it refused", err)
	}
}
