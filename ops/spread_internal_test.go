package ops

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Cut to a few, a list of many queues keeps the worst of each trouble:
// the most dead, the largest backlog, the most failures and a paused one,
// where ranked by name the first queues with a dead message took every
// place.
func TestInTurnsKeepsTheWorstOfEachTrouble(t *testing.T) {
	t.Parallel()
	var qs []QueueStats
	for i := range 300 {
		qs = append(qs, QueueStats{Queue: fmt.Sprintf("dead_%03d", i), DLQDepth: int64(1 + i%7)})
	}
	qs = append(qs, QueueStats{Queue: "zz_backlog", Visible: 2000}, QueueStats{Queue: "zz_paused", Paused: true, Depth: 3},
		QueueStats{Queue: "zz_failing", LastHour: Counters{Failed: 40}}, QueueStats{Queue: "zz_quiet"})
	id := func(q QueueStats) string { return q.Queue }
	ranked := inTurns(qs, id,
		sortedBy(qs, func(q QueueStats) bool { return q.DLQDepth > 0 }, func(q QueueStats) int64 { return q.DLQDepth }),
		sortedBy(qs, func(q QueueStats) bool { return q.Visible > 0 }, func(q QueueStats) int64 { return q.Visible }),
		sortedBy(qs, func(q QueueStats) bool { return q.LastHour.Failed > 0 }, func(q QueueStats) int64 { return q.LastHour.Failed }),
		sortedBy(qs, func(q QueueStats) bool { return q.Paused }, func(q QueueStats) int64 { return q.Depth }))
	if len(ranked) != len(qs) {
		t.Fatalf("%d queues ordered of %d", len(ranked), len(qs))
	}
	first := make([]string, 8)
	for i := range first {
		first[i] = ranked[i].Queue
	}
	for _, want := range []string{"zz_backlog", "zz_paused", "zz_failing", "dead_006"} {
		if !slices.Contains(first, want) {
			t.Errorf("the first eight of the order %v lack %s", first, want)
		}
	}
	if ranked[len(ranked)-1].Queue != "zz_quiet" {
		t.Errorf("the quiet queue is not last: %v", ranked[len(ranked)-1])
	}
}

// Cut to a few, the reasons of a verdict keep each code of a level, in
// turn, STALLED ones first.
func TestReasonsInTurns(t *testing.T) {
	t.Parallel()
	var rs []HealthReason
	rs = append(rs, HealthReason{Status: HealthStalled, Code: "backlog_not_draining", Queue: "s"})
	for i := range 50 {
		rs = append(rs, HealthReason{Status: HealthDegraded, Code: "dead_letters_growing", Queue: fmt.Sprint(i)})
	}
	rs = append(rs, HealthReason{Status: HealthDegraded, Code: "dlq_of_dropped_queue", Queue: "gone"}, HealthReason{Status: HealthDegraded, Code: "queue_paused", Queue: "p"},
		HealthReason{Status: HealthNotice, Code: "standby"})
	got := reasonsInTurns(rs)
	var codes []string
	for _, r := range got[:4] {
		codes = append(codes, r.Code)
	}
	if strings.Join(codes, ",") != "backlog_not_draining,dead_letters_growing,dlq_of_dropped_queue,queue_paused" || len(got) != len(rs) || got[len(got)-1].Code != "standby" {
		t.Fatalf("the first four codes %v (of %d reasons, the last %v); want the stalled one, then each degraded code in turn, the notice last", codes, len(got), got[len(got)-1])
	}
}
