package ops

import (
	"cmp"
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
	// MaxQueues, above 0, returns the series of at most that many queues,
	// those that ran the most jobs in the window, and of Chart: a page
	// draws each series, and hundreds would weigh megabytes. The others
	// are named in the result's Ran, the most jobs first, and Quiet. 0
	// returns the series of every queue.
	MaxQueues int
	// MaxNames, above 0, names at most that many queues in Ran and as
	// many in Quiet; RanOmitted and QuietOmitted count the others.
	MaxNames int
	// QueueNameContains keeps only the queues whose names contain it, for
	// a person looking for one among hundreds; Filtered counts the others.
	QueueNameContains string
	// Chart names a queue whose series is returned whatever the bounds
	// and the name: one a person asked to see.
	Chart string
}

// Check refuses a negative bound, and text no name or window can hold.
func (r ThroughputRequest) Check() error {
	if r.MaxQueues < 0 || r.MaxNames < 0 {
		return invalidf("a throughput's bounds are 0 (list everything) or more, not %d queues and %d names", r.MaxQueues, r.MaxNames)
	}
	return checkText("queue", r.Queue, "window", r.Window, "queue_name_contains", r.QueueNameContains, "chart", r.Chart)
}

// QueueJobs is a queue and the jobs it ran in a window.
type QueueJobs struct {
	Queue string `json:"queue"`
	Jobs  int64  `json:"jobs" jsonschema_description:"The attempts settled in the window"`
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
	// Queues are by name; of every queue, each one, counted or not,
	// unless the request bounds them.
	Queues []QueueThroughput `json:"queues"`
	// Ran are the queues that ran jobs in the window but have no series
	// in Queues, past the request's MaxQueues: the most jobs first (by
	// name among equals), at most MaxNames of them; RanOmitted counts the
	// others.
	Ran        []QueueJobs `json:"ran,omitempty" jsonschema_description:"Queues that ran jobs but were left out of queues, the most jobs first"`
	RanOmitted int         `json:"ran_omitted,omitempty" jsonschema_description:"Queues that ran jobs, in neither queues nor ran"`
	// Quiet names the queues that ran no job in the window and have no
	// series in Queues, by name, at most MaxNames of them; QuietOmitted
	// counts the others.
	Quiet        []string `json:"quiet,omitempty" jsonschema_description:"Queues that ran no job in the window, by name"`
	QuietOmitted int      `json:"quiet_omitted,omitempty" jsonschema_description:"Queues that ran no job, in neither queues nor quiet"`
	// Filtered counts the queues whose names do not contain the request's
	// QueueNameContains.
	Filtered int `json:"filtered,omitempty" jsonschema_description:"Queues left out because their names do not contain the text asked for"`
}

// Busy counts the queues that ran jobs in the window, with a series or
// without.
func (r ThroughputResult) Busy() int {
	n := len(r.Ran) + r.RanOmitted
	for _, q := range r.Queues {
		if !q.Empty() {
			n++
		}
	}
	return n
}

// BucketMinutes is the length of a bucket in minutes.
func (r ThroughputResult) BucketMinutes() int { return r.BucketSeconds / 60 }

// Throughput returns the outcomes per time bucket of one queue or of every
// queue over the window asked for, from the workers' per-minute counters:
// 60 one-minute buckets for WindowHour, 96 of fifteen minutes for
// WindowDay, the last holding now, every bucket present.
func (s *Service) Throughput(ctx context.Context, req ThroughputRequest) (_ ThroughputResult, err error) {
	ctx, end, err := s.enter(ctx, "Throughput", reads)
	if err != nil {
		return ThroughputResult{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
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
	req.bound(&out)
	return out, nil
}

// bound leaves out of out.Queues, of every queue by name, those whose
// names do not contain the text asked for, then the series past
// MaxQueues: the queues that ran the fewest jobs, and those that ran none,
// which it names instead, up to MaxNames.
func (r ThroughputRequest) bound(out *ThroughputResult) {
	if r.QueueNameContains != "" {
		n := len(out.Queues)
		out.Queues = slices.DeleteFunc(out.Queues, func(q QueueThroughput) bool {
			return q.Queue != r.Chart && !strings.Contains(q.Queue, strings.ToLower(r.QueueNameContains))
		})
		out.Filtered = n - len(out.Queues)
	}
	if r.MaxQueues == 0 {
		return
	}
	ran := slices.DeleteFunc(slices.Clone(out.Queues), QueueThroughput.Empty)
	slices.SortStableFunc(ran, func(a, b QueueThroughput) int {
		return cmp.Or(cmp.Compare(b.Total.Total(), a.Total.Total()), cmp.Compare(a.Queue, b.Queue))
	})
	kept := map[string]bool{r.Chart: true}
	for _, q := range ran[:min(len(ran), r.MaxQueues)] {
		kept[q.Queue] = true
	}
	for _, q := range ran {
		if !kept[q.Queue] {
			out.Ran = append(out.Ran, QueueJobs{Queue: q.Queue, Jobs: q.Total.Total()})
		}
	}
	all := out.Queues
	out.Queues = make([]QueueThroughput, 0, len(kept))
	for _, q := range all {
		switch {
		case kept[q.Queue]:
			out.Queues = append(out.Queues, q)
		case q.Empty():
			out.Quiet = append(out.Quiet, q.Queue)
		}
	}
	if n := len(out.Ran) - r.MaxNames; r.MaxNames > 0 && n > 0 {
		out.Ran, out.RanOmitted = out.Ran[:r.MaxNames], n
	}
	if n := len(out.Quiet) - r.MaxNames; r.MaxNames > 0 && n > 0 {
		out.Quiet, out.QuietOmitted = out.Quiet[:r.MaxNames], n
	}
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
