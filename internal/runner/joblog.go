package runner

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/ops"
)

// DefaultSummaryEvery is how often a JobLog logs what each queue did.
const DefaultSummaryEvery = 30 * time.Second

// shortMessage bounds the error text of a dead-letter's log line.
const shortMessage = 200

// JobLog is an engine.Observer that logs what a person watching the
// workers needs at the info level: each dead-letter and each discard (a
// handler's engine.Discard, an on_status or on_exit rule, a
// discard_exit_codes code), and from Run a line
// per queue of what it did since the last line (nothing while idle) and a
// line per queue for the whole run at the end. Successes and retries are
// only counted; NewClient logs each job at debug. A queue is named as its
// messages were read: each priority level of a priority queue
// (orders_p2) has lines of its own.
type JobLog struct {
	log *slog.Logger

	mu    sync.Mutex
	since map[string]*jobCounts // since the last summary line
	total map[string]*jobCounts // since the start
}

// jobCounts counts the outcomes of one queue's deliveries.
type jobCounts struct {
	Succeeded, Retried, DeadLettered, Discarded, Snoozed int64
}

func (c *jobCounts) add(outcome string) {
	switch outcome {
	case engine.OutcomeSucceeded:
		c.Succeeded++
	case engine.OutcomeRetried:
		c.Retried++
	case engine.OutcomeDeadLettered:
		c.DeadLettered++
	case engine.OutcomeDiscarded:
		c.Discarded++
	case engine.OutcomeSnoozed:
		c.Snoozed++
	}
}

func (c *jobCounts) attrs(queue string) []any {
	return []any{"queue", queue, "succeeded", c.Succeeded, "retried", c.Retried, "dead_lettered", c.DeadLettered,
		"discarded", c.Discarded, "snoozed", c.Snoozed}
}

// NewJobLog returns a JobLog writing to log; nil discards.
func NewJobLog(log *slog.Logger) *JobLog {
	return &JobLog{log: orDiscard(log), since: map[string]*jobCounts{}, total: map[string]*jobCounts{}}
}

// JobStarted implements engine.Observer; it changes nothing.
func (l *JobLog) JobStarted(ctx context.Context, _ *engine.Job) context.Context { return ctx }

// JobFinished implements engine.Observer: it counts the outcome and logs
// a dead-letter or a discard at info, with its error redacted and
// shortened; a discard with the archive that keeps the message, marked
// with the pgbus_discarded header, until the queue's archive retention.
func (l *JobLog) JobFinished(_ context.Context, job *engine.Job, f engine.Finish) {
	queue := job.Queue
	l.mu.Lock()
	for _, m := range []map[string]*jobCounts{l.since, l.total} {
		c := m[queue]
		if c == nil {
			c = &jobCounts{}
			m[queue] = c
		}
		c.add(f.Outcome)
	}
	l.mu.Unlock()
	if f.Outcome != engine.OutcomeDeadLettered && f.Outcome != engine.OutcomeDiscarded {
		return
	}
	msg := ""
	if f.Err != nil {
		msg = shorten(f.Err.Error())
	}
	// A kind another producer wrote into the queue can be of any length.
	kind := clipBytes(job.Kind, engine.MaxKindBytes)
	if f.Outcome == engine.OutcomeDiscarded {
		// The message is in no DLQ: its line says where it is. The queue
		// is the physical one its message was read from, whose archive
		// keeps it.
		l.log.Info("pgbus: job discarded: archived with header pgbus_discarded, not dead-lettered",
			"queue", queue, "msg_id", job.ID, "kind", kind, "attempt", job.Attempt, "error_class", f.ErrorClass, "err", msg,
			"archive", "pgmq.a_"+queue)
		return
	}
	l.log.Info("pgbus: job dead-lettered", "queue", queue, "msg_id", job.ID, "kind", kind, "reason", f.Reason,
		"attempt", job.Attempt, "error_class", f.ErrorClass, "err", msg)
}

// shorten redacts an error's text and cuts it to a log line's length; it
// redacts first, so that a cut never leaves part of a secret unrecognised.
func shorten(s string) string {
	s, _ = ops.RedactText(s)
	return clipBytes(s, shortMessage)
}

// clipBytes cuts s to at most n bytes, on a character's boundary, and
// marks the cut.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Run logs, every interval (DefaultSummaryEvery when 0 or less), one line
// per queue that settled messages since the last line, until ctx ends.
func (l *JobLog) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultSummaryEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Flush()
		}
	}
}

// Flush logs one line per queue that settled messages since the last
// line, and starts counting again.
func (l *JobLog) Flush() {
	l.mu.Lock()
	since := l.since
	l.since = map[string]*jobCounts{}
	l.mu.Unlock()
	for _, q := range sortedKeys(since) {
		l.log.Info("pgbus: in the last interval", since[q].attrs(q)...)
	}
}

// maxIdleSummaries is how many queues that settled nothing get a summary
// line of zeros each; past it, one line counts them all: a process of
// hundreds of queues ended with a screenful of zeros.
const maxIdleSummaries = 10

// Summary logs one line per queue with what it did since the JobLog was
// made; each of queues that settled nothing gets a line of zeros (unless
// its priority levels have lines), or, past maxIdleSummaries of them, one
// line counts them.
func (l *JobLog) Summary(queues []string) {
	l.mu.Lock()
	total := make(map[string]jobCounts, len(l.total))
	for q, c := range l.total {
		total[q] = *c
	}
	l.mu.Unlock()
	var idle []string
	for _, q := range queues {
		levels := false
		for name := range total {
			levels = levels || isLevelOf(name, q)
		}
		if _, ok := total[q]; !ok && !levels {
			idle = append(idle, q)
		}
	}
	if len(idle) <= maxIdleSummaries {
		for _, q := range idle {
			total[q] = jobCounts{}
		}
	}
	for _, q := range sortedKeys(total) {
		c := total[q]
		l.log.Info("pgbus: summary of this run", c.attrs(q)...)
	}
	if len(idle) > maxIdleSummaries {
		slices.Sort(idle)
		l.log.Info("pgbus: summary of this run: queues that settled nothing", "queues", len(idle), "first", strings.Join(idle[:3], ","))
	}
}

// isLevelOf reports whether name is a priority level of queue q (q_p0,
// q_p1, ...), and not another queue whose name starts so (q_payments).
func isLevelOf(name, q string) bool {
	level, ok := strings.CutPrefix(name, q+"_p")
	if !ok || level == "" {
		return false
	}
	for _, c := range level {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
