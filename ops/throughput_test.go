package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

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
