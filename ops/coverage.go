package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Worker coverage of a queue, as QueueWorkers.Status gives it.
const (
	// CoverageRunning: a running worker process serves the queue.
	CoverageRunning = "running"
	// CoverageNever: no worker process served the queue in the last 24
	// hours.
	CoverageNever = "never"
	// CoverageStopped: the processes that served it shut down.
	CoverageStopped = "stopped"
	// CoverageStale: a process that served it stopped heartbeating without
	// shutting down (crashed or hung), and none serves it now.
	CoverageStale = "stale"
)

// QueueWorkers says whether a running worker process serves a queue, so
// that a message sent back to it will run.
type QueueWorkers struct {
	Queue      string     `json:"queue"`
	Status     string     `json:"status" jsonschema:"enum=running,enum=never,enum=stopped,enum=stale" jsonschema_description:"running: a worker process serves the queue; never: none served it in the last 24 hours; stopped: those that did shut down; stale: one that did stopped heartbeating (crashed or hung)."`
	Running    int        `json:"running" jsonschema_description:"Running worker processes that serve the queue."`
	LastSeenAt *time.Time `json:"last_seen_at,omitempty" jsonschema_description:"When no process serves the queue: the last heartbeat of one that did."`
	Note       string     `json:"note" jsonschema_description:"What this means for the queue's messages, in words."`
}

// Served reports whether a running worker serves the queue.
func (q QueueWorkers) Served() bool { return q.Status == CoverageRunning }

// coverage says which of ws serve queue.
func coverage(ws Workers, queue string) QueueWorkers {
	out := QueueWorkers{Queue: queue, Status: CoverageNever}
	names := servedAs(queue)
	for _, w := range ws.Workers {
		if !slices.ContainsFunc(w.Queues, func(q string) bool { return slices.Contains(names, q) }) {
			continue
		}
		switch w.Status {
		case WorkerRunning:
			out.Running++
			out.Status = CoverageRunning
		case WorkerStale:
			if out.Status != CoverageRunning {
				out.Status = CoverageStale
			}
		case WorkerStopped:
			if out.Status == CoverageNever {
				out.Status = CoverageStopped
			}
		}
		if out.Status != CoverageRunning && (out.LastSeenAt == nil || w.HeartbeatAt.After(*out.LastSeenAt)) {
			seen := w.HeartbeatAt
			out.LastSeenAt = &seen
		}
	}
	if out.Served() {
		out.LastSeenAt = nil
	}
	out.Note = out.note()
	return out
}

func (q QueueWorkers) note() string {
	switch q.Status {
	case CoverageRunning:
		return fmt.Sprintf("%d running worker process(es) serve queue %s", q.Running, q.Queue)
	case CoverageNever:
		return fmt.Sprintf("no worker process has served queue %s in the last 24 hours: its messages will not run until one is started", q.Queue)
	case CoverageStale:
		return fmt.Sprintf("the worker process(es) that served queue %s stopped heartbeating (crashed or hung) and none serves it now: its messages will not run until one is started", q.Queue)
	}
	return fmt.Sprintf("the worker process(es) that served queue %s shut down and none serves it now: its messages will not run until one is started", q.Queue)
}

// startHint is the next step for a queue no worker serves.
func (q QueueWorkers) startHint() Hint {
	return hint(OpWork, "start a worker for the queue with its handler (the configuration file's, with --config): no running worker serves it", "queue", q.Queue)
}

// servedAs lists the names a worker serving queue registers: workers
// register the queues they were given, and a priority sub-queue (jobs_p1)
// is worked by the workers of its queue (jobs).
func servedAs(queue string) []string {
	if i := strings.LastIndex(queue, "_p"); i > 0 && isDigits(queue[i+2:]) {
		return []string{queue, queue[:i]}
	}
	return []string{queue}
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// queueCoverage says, for each queue named, whether a running worker
// serves it; queues are reported once each, in the order first named. A
// priority level is reported as its queue, which workers are started for.
func (s *Service) queueCoverage(ctx context.Context, queues []string) ([]QueueWorkers, error) {
	ws, err := s.allWorkers(ctx)
	if err != nil {
		return nil, err
	}
	var out []QueueWorkers
	seen, asked := map[string]bool{}, map[string]bool{}
	for _, q := range queues {
		if q = baseQueue(q); asked[q] {
			continue
		}
		asked[q] = true
		if base, _, ok, err := s.store.LevelOf(ctx, q); err != nil {
			return nil, err
		} else if ok {
			q = base
		}
		if !seen[q] {
			seen[q] = true
			out = append(out, coverage(ws, q))
		}
	}
	return out, nil
}

// noteRetryWorkers adds to a retry's result whether workers serve the
// queues its messages went back to, and the next step for those none
// serves: a retry into a queue without workers does not run.
func (s *Service) noteRetryWorkers(ctx context.Context, r *DLQRetry) {
	if r.Retried == 0 || len(r.Moved) == 0 {
		return
	}
	queues := make([]string, len(r.Moved))
	for i, m := range r.Moved {
		queues[i] = m.Queue
	}
	cov, err := s.queueCoverage(ctx, queues)
	if err != nil {
		return // the retry happened; a note it cannot make is no reason to fail it
	}
	r.Workers = cov
	for _, c := range cov {
		if !c.Served() {
			r.Next = append([]Hint{c.startHint()}, r.Next...)
		}
	}
	s.noteRetryBreakers(ctx, r, queues)
	s.noteRetryPaused(ctx, r, queues)
}

// noteRetryPaused puts first among a retry's next steps the resume of each
// paused queue its messages went back to: they wait there, unread, until
// it is resumed, whatever the workers.
func (s *Service) noteRetryPaused(ctx context.Context, r *DLQRetry, queues []string) {
	seen := map[string]bool{}
	for _, q := range queues {
		names := servedAs(q)
		logical := names[len(names)-1] // a priority level is paused with its queue
		if seen[logical] {
			continue
		}
		seen[logical] = true
		st, err := s.store.QueueSettingsOf(ctx, logical)
		if err == nil && st.Paused {
			r.Next = append([]Hint{hint(OpQueueResume, fmt.Sprintf("queue %q is paused: the retried messages wait in it, unread, until it is resumed", logical), "queue", logical)}, r.Next...)
		}
	}
}

// noteRetryBreakers adds to a retry's next steps the breakers that are not
// closed and that handlers of the queues its messages went back to use:
// those messages wait for the breaker (snoozed, not failed), which would
// otherwise look like a retry that did nothing.
func (s *Service) noteRetryBreakers(ctx context.Context, r *DLQRetry, queues []string) {
	breakers, err := s.store.ListBreakers(ctx, "")
	if err != nil {
		return // as for the workers: the retry happened
	}
	for _, b := range breakers {
		if b.State == store.BreakerClosed {
			continue
		}
		if q, ok := usedOn(runningUsers(b.Users, s.now()), queues); ok {
			r.Next = append([]Hint{hint(OpCircuits, fmt.Sprintf("breaker %q, which handlers of queue %q use, is %s: the retried jobs wait for it, snoozed, not failed, until a probe call succeeds",
				b.Name, q, strings.ReplaceAll(b.State, "_", "-")), "name", b.Name)}, r.Next...)
		}
	}
}

// usedOn returns the first of queues (physical: a priority level counts
// as its queue) that one of users is on.
func usedOn(users []store.BreakerUser, queues []string) (string, bool) {
	for _, q := range queues {
		for _, u := range users {
			level, isLevel := strings.CutPrefix(q, u.Queue+"_p")
			if q == u.Queue || (isLevel && level != "" && strings.Trim(level, "0123456789") == "") {
				return u.Queue, true
			}
		}
	}
	return "", false
}
