package ops

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Throughput windows, as ThroughputRequest.Window takes them.
const (
	WindowHour = "1h"
	WindowDay  = "24h"
)

// ThroughputWindows are the windows Throughput offers, shortest first.
var ThroughputWindows = []string{WindowHour, WindowDay}

// throughputBuckets cuts each window: minutes for the hour, as the
// counters are kept; quarter hours for the day, few enough to draw.
var throughputBuckets = map[string]struct {
	step time.Duration
	n    int
}{
	WindowHour: {time.Minute, 60},
	WindowDay:  {15 * time.Minute, 96},
}

// ThroughputRequest asks for the outcomes per time bucket of one queue, or
// of every queue when Queue is "", over Window (WindowHour when "").
type ThroughputRequest struct {
	Queue  string
	Window string
}

// Outcomes are the attempts settled in some span: completed, failed and
// to be run again, dead-lettered, discarded.
type Outcomes struct {
	Succeeded    int64 `json:"succeeded" jsonschema_description:"Attempts that completed"`
	Retried      int64 `json:"retried" jsonschema_description:"Attempts that failed and will run again"`
	DeadLettered int64 `json:"dead_lettered" jsonschema_description:"Messages moved to the dead-letter queue"`
	Discarded    int64 `json:"discarded" jsonschema_description:"Messages a handler discarded"`
}

// Total is the number of attempts the outcomes count.
func (o Outcomes) Total() int64 { return o.Succeeded + o.Retried + o.DeadLettered + o.Discarded }

// ThroughputBucket is the outcomes of one bucket, which starts at Start and
// lasts the result's BucketSeconds.
type ThroughputBucket struct {
	Start time.Time `json:"start"`
	Outcomes
}

// QueueThroughput is one queue's outcomes over the window.
type QueueThroughput struct {
	Queue string   `json:"queue"`
	Total Outcomes `json:"total" jsonschema_description:"The outcomes over the whole window"`
	// Buckets has every bucket of the window, oldest first, zero where
	// nothing was counted.
	Buckets []ThroughputBucket `json:"buckets" jsonschema_description:"Every bucket of the window, oldest first"`
	// Peak is the bucket with the most outcomes, the latest of equals;
	// absent when the window counted nothing.
	Peak          *ThroughputBucket `json:"peak,omitempty" jsonschema_description:"The bucket with the most outcomes; absent when nothing was counted"`
	PeakPerMinute float64           `json:"peak_per_minute" jsonschema_description:"The peak bucket's outcomes per minute"`
}

// Empty reports whether nothing was counted in the window.
func (q QueueThroughput) Empty() bool { return q.Peak == nil }

// ThroughputResult is the outcomes per bucket of the queues asked for.
type ThroughputResult struct {
	Window        string    `json:"window"`
	BucketSeconds int       `json:"bucket_seconds"`
	From          time.Time `json:"from" jsonschema_description:"The start of the first bucket"`
	Until         time.Time `json:"until" jsonschema_description:"The end of the last bucket, which holds now"`
	// Queues are by name; of every queue, each one, counted or not.
	Queues []QueueThroughput `json:"queues"`
}

// BucketMinutes is the length of a bucket in minutes.
func (r ThroughputResult) BucketMinutes() int { return r.BucketSeconds / 60 }

// Throughput returns the outcomes per time bucket of one queue or of every
// queue over the window asked for, from the workers' per-minute counters:
// 60 one-minute buckets for WindowHour, 96 of fifteen minutes for
// WindowDay, the last holding now, every bucket present.
func (s *Service) Throughput(ctx context.Context, req ThroughputRequest) (_ ThroughputResult, err error) {
	defer s.explainDB(ctx, &err, reads)
	if err := checkText("queue", req.Queue, "window", req.Window); err != nil {
		return ThroughputResult{}, err
	}
	if req.Window == "" {
		req.Window = WindowHour
	}
	w, ok := throughputBuckets[req.Window]
	if !ok {
		e := invalidf("window %q is not offered: pass %s for the last hour (one-minute buckets) or %s for the last day (fifteen-minute buckets)",
			req.Window, WindowHour, WindowDay)
		e.Field = "window"
		return ThroughputResult{}, e
	}
	if req.Queue != "" {
		if err := store.ValidatePhysicalName(req.Queue); err != nil {
			return ThroughputResult{}, explain(err, hint(OpQueueStats, "lists the queues there are"))
		}
		if base, isDLQ := strings.CutSuffix(req.Queue, store.DLQSuffix); isDLQ {
			return ThroughputResult{}, invalidf("%s is the dead-letter queue of %s: no job runs there; its arrivals are the dead-lettered outcomes of %s", req.Queue, base, base).
				with(hint(OpQueueStats, "the stats of its queue", "queue", base))
		}
	}
	queues, err := s.store.WorkQueues(ctx)
	if err != nil {
		return ThroughputResult{}, err
	}
	if req.Queue != "" {
		if !slices.Contains(queues, req.Queue) {
			return ThroughputResult{}, notFoundf("queue %q does not exist", req.Queue).with(hint(OpQueueStats, "lists the queues there are"))
		}
		queues = []string{req.Queue}
	}
	last := s.now().UTC().Truncate(w.step)
	sp := store.ThroughputSpan{First: last.Add(-time.Duration(w.n-1) * w.step), Step: w.step, Buckets: w.n}
	series, err := s.store.Throughput(ctx, req.Queue, sp)
	if err != nil {
		return ThroughputResult{}, err
	}
	counted := make(map[string][]store.Outcomes, len(series))
	for _, se := range series {
		counted[se.Queue] = se.Buckets
		if !slices.Contains(queues, se.Queue) {
			// Counted but not listed: created, or dropped with its
			// counters, since the list was read.
			queues = append(queues, se.Queue)
		}
	}
	slices.Sort(queues)
	out := ThroughputResult{Window: req.Window, BucketSeconds: int(w.step / time.Second), From: sp.First,
		Until: last.Add(w.step), Queues: make([]QueueThroughput, 0, len(queues))}
	for _, q := range queues {
		out.Queues = append(out.Queues, queueThroughput(q, sp, counted[q]))
	}
	return out, nil
}

// queueThroughput is the series of one queue; counted is nil when nothing
// was.
func queueThroughput(queue string, sp store.ThroughputSpan, counted []store.Outcomes) QueueThroughput {
	qt := QueueThroughput{Queue: queue, Buckets: make([]ThroughputBucket, sp.Buckets)}
	peak := -1
	for i := range qt.Buckets {
		b := &qt.Buckets[i]
		b.Start = sp.First.Add(time.Duration(i) * sp.Step)
		if i < len(counted) {
			b.Outcomes = Outcomes(counted[i])
		}
		qt.Total = Outcomes{Succeeded: qt.Total.Succeeded + b.Succeeded, Retried: qt.Total.Retried + b.Retried,
			DeadLettered: qt.Total.DeadLettered + b.DeadLettered, Discarded: qt.Total.Discarded + b.Discarded}
		if n := b.Total(); n > 0 && (peak < 0 || n >= qt.Buckets[peak].Total()) {
			peak = i
		}
	}
	if peak >= 0 {
		p := qt.Buckets[peak]
		qt.Peak = &p
		qt.PeakPerMinute = float64(p.Total()) / sp.Step.Minutes()
	}
	return qt
}
