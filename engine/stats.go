package engine

import (
	"sync"
	"time"

	"github.com/pgbus/pgbus/store"
)

type statsKey struct {
	minute time.Time
	queue  string
	table  uint32 // of the read, store.StatsDelta.Table
	kind   string
}

// statsCollector counts outcomes in memory per queue, kind and minute until
// the next flush writes them in one statement.
type statsCollector struct {
	mu     sync.Mutex
	deltas map[statsKey]*store.StatsDelta
}

func newStatsCollector() *statsCollector {
	return &statsCollector{deltas: map[statsKey]*store.StatsDelta{}}
}

// add counts r in the minute now, on the database's clock: the minute
// readers of the stats count back from on theirs. It is counted for the
// table its message was read from, so that the flush leaves it out once
// the queue was dropped, even when made again.
func (s *statsCollector) add(queue string, r result, now time.Time) {
	key := statsKey{minute: now.UTC().Truncate(time.Minute), queue: queue, table: r.table, kind: r.kind}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.deltas[key]
	if d == nil {
		d = &store.StatsDelta{Minute: key.minute, Queue: queue, Table: r.table, Kind: r.kind}
		s.deltas[key] = d
	}
	switch r.action {
	case actionSucceed:
		d.Succeeded++
	case actionRetry:
		d.Failed++
		d.Retried++
	case actionDeadLetter:
		if r.failure != nil {
			d.Failed++
		}
		d.DeadLettered++
	case actionDiscard:
		d.Failed++
		d.Discarded++
	case actionSnooze:
		d.Snoozed++
	}
	if r.latency > 0 {
		d.LatencyCount++
		d.LatencySumMS += float64(r.latency) / float64(time.Millisecond)
		d.LatencyBuckets[store.LatencyBucket(r.latency)]++
	}
}

// take removes and returns everything counted so far.
func (s *statsCollector) take() []store.StatsDelta {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.StatsDelta, 0, len(s.deltas))
	for _, d := range s.deltas {
		out = append(out, *d)
	}
	clear(s.deltas)
	return out
}

// giveBack merges counters whose write failed into the next flush.
func (s *statsCollector) giveBack(deltas []store.StatsDelta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range deltas {
		key := statsKey{minute: d.Minute, queue: d.Queue, table: d.Table, kind: d.Kind}
		cur := s.deltas[key]
		if cur == nil {
			c := d
			s.deltas[key] = &c
			continue
		}
		cur.Add(d)
	}
}
