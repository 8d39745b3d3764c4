package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Counters land in the bucket of their minute, summed over kinds; minutes
// outside the span are left out; buckets without counters are zero, and
// one statement returns every queue with counters.
func TestThroughputBucketsPerQueue(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	a, b, quiet := uniqueName("tp_a"), uniqueName("tp_b"), uniqueName("tp_quiet")
	for _, q := range []string{a, b, quiet} {
		pgtest.CreateQueue(t, s, q) // counters are kept for queues that exist
	}
	// Hours ago, so that no minute is still being counted, and well within
	// the counters' retention, which a test elsewhere may run meanwhile.
	first := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	at := func(m int) time.Time { return first.Add(time.Duration(m) * time.Minute) }
	err := s.AddStats(ctx, []store.StatsDelta{
		{Minute: at(-1), Queue: a, Kind: "k", Succeeded: 1000},
		{Minute: at(0), Queue: a, Kind: "k", Succeeded: 3, Retried: 1},
		{Minute: at(1), Queue: a, Kind: "k", Succeeded: 4, DeadLettered: 2},
		{Minute: at(1), Queue: a, Kind: "other", Succeeded: 5, Discarded: 1, Snoozed: 9},
		{Minute: at(5), Queue: a, Kind: "k", Retried: 7},
		{Minute: at(8), Queue: a, Kind: "k", Succeeded: 1000},
		{Minute: at(7), Queue: b, Kind: "k", DeadLettered: 6},
	})
	if err != nil {
		t.Fatal(err)
	}
	sp := store.ThroughputSpan{First: first, Step: 2 * time.Minute, Buckets: 4}

	series, err := s.Throughput(ctx, a, sp)
	if err != nil {
		t.Fatal(err)
	}
	wantA := []store.Outcomes{
		{Succeeded: 12, Retried: 1, DeadLettered: 2, Discarded: 1},
		{},
		{Retried: 7},
		{},
	}
	if len(series) != 1 || series[0].Queue != a || !equalOutcomes(series[0].Buckets, wantA) {
		t.Fatalf("throughput of %s = %+v, want %+v", a, series, wantA)
	}

	all, err := s.Throughput(ctx, "", sp)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]store.Outcomes{}
	for _, se := range all {
		got[se.Queue] = se.Buckets
	}
	wantB := []store.Outcomes{{}, {}, {}, {DeadLettered: 6}}
	if !equalOutcomes(got[a], wantA) || !equalOutcomes(got[b], wantB) {
		t.Fatalf("throughput of every queue: %s = %+v, %s = %+v; want %+v and %+v", a, got[a], b, got[b], wantA, wantB)
	}
	if _, ok := got[quiet]; ok {
		t.Fatalf("%s has no counters but is in the throughput of every queue", quiet)
	}

	none, err := s.Throughput(ctx, quiet, sp)
	if err != nil {
		t.Fatal(err)
	}
	if len(none) != 1 || none[0].Queue != quiet || !equalOutcomes(none[0].Buckets, make([]store.Outcomes, 4)) {
		t.Fatalf("throughput of a queue without counters = %+v, want 4 zero buckets", none)
	}
}

func TestThroughputRefusesBadSpans(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	now := time.Now()
	for _, sp := range []store.ThroughputSpan{
		{First: now, Step: 30 * time.Second, Buckets: 10},
		{First: now, Step: 90 * time.Second, Buckets: 10},
		{First: now, Step: time.Minute, Buckets: 0},
		{First: now, Step: time.Minute, Buckets: store.MaxThroughputBuckets + 1},
	} {
		if _, err := s.Throughput(ctx, "", sp); err == nil {
			t.Errorf("Throughput(%+v) did not fail", sp)
		}
	}
	if _, err := s.Throughput(ctx, "bad name!", store.ThroughputSpan{First: now, Step: time.Minute, Buckets: 1}); err == nil {
		t.Error("Throughput of an invalid queue name did not fail")
	}
}

func equalOutcomes(a, b []store.Outcomes) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
