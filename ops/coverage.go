package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// Worker coverage of a queue, as QueueWorkers.Status gives it.
const (
	// CoverageRunning: a running worker process serves the queue.
	CoverageRunning = "running"
	// CoverageNever: no worker process served the queue in the last 24
	// hours.
	CoverageNever = "never"
	// CoverageStopped: the process that served it last shut down, and none
	// serves it now.
	CoverageStopped = "stopped"
	// CoverageStale: the process that served it last stopped heartbeating
	// without shutting down (crashed or hung), and none serves it now.
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
	for _, w := range ws.Workers {
		if !slices.Contains(w.Queues, queue) {
			continue
		}
		if w.Status == WorkerRunning {
			out.Running++
			out.Status = CoverageRunning
			continue
		}
		// Of the processes gone, the last seen says how the queue was
		// left: one killed long ago does not make a clean shutdown since
		// read as a crash.
		if out.Status != CoverageRunning && (out.LastSeenAt == nil || w.HeartbeatAt.After(*out.LastSeenAt)) {
			seen := w.HeartbeatAt
			out.LastSeenAt = &seen
			out.Status = CoverageStopped
			if w.Status == WorkerStale {
				out.Status = CoverageStale
			}
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
		return fmt.Sprintf("%s queue %s", plural.Count(q.Running, "running worker process serves", "running worker processes serve"), q.Queue)
	case CoverageNever:
		return fmt.Sprintf("no worker process has served queue %s in the last 24 hours: its messages will not run until one is started", q.Queue)
	case CoverageStale:
		return fmt.Sprintf("the worker process(es) that served queue %s stopped heartbeating (crashed or hung) and none serves it now: its messages will not run until one is started", q.Queue)
	}
	return fmt.Sprintf("the worker process(es) that served queue %s shut down and none serves it now: its messages will not run until one is started", q.Queue)
}

// startHints are the next steps for a queue no worker serves: starting
// one, with the handler the queue is known to run with (Options.Handlers).
// For a queue with no known handler the step says one is to be chosen,
// since a worker refuses a queue without a handler. A service given no
// Handlers runs in a program whose workers run handlers of its own code,
// which only that program can start: there is no step to give.
func (s *Service) startHints(q QueueWorkers) []Hint {
	if s.opts.Handlers == nil {
		return nil
	}
	switch handler := s.opts.Handlers[q.Queue]; handler {
	case "":
		return []Hint{hint(OpWork, "start a worker, choosing its handler: demo, or exec or http set up in the configuration file",
			"queue", q.Queue, WorkNeedsHandler, true)}
	case HandlerConfigured:
		return []Hint{hint(OpWork, "start a worker for the queue with the configuration's handler: no running worker serves it", "queue", q.Queue)}
	default:
		return []Hint{hint(OpWork, "start a worker for the queue: no running worker serves it", "queue", q.Queue, "handler", handler)}
	}
}

// logicalQueues returns the queues named, each once in the order first
// named, a DLQ as its queue and a priority level as the queue it is a
// level of: workers register the queues they were given, and a level is
// worked, paused and used by handlers as its queue. A plain queue named
// like a level (jobs_p2 beside jobs with 2 levels) is its own.
func (s *Service) logicalQueues(ctx context.Context, queues []string) ([]string, error) {
	levels, err := s.store.QueueLevels(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, q := range queues {
		q = baseQueue(q)
		if base, _, ok := store.LevelIn(levels, q); ok {
			q = base
		}
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	return out, nil
}

// queueCoverage says, for each queue named, whether a running worker
// serves it; queues are reported once each, in the order first named. A
// priority level is reported as its queue, which workers are started for.
func (s *Service) queueCoverage(ctx context.Context, queues []string) ([]QueueWorkers, error) {
	logical, err := s.logicalQueues(ctx, queues)
	if err != nil {
		return nil, err
	}
	return s.coverageOf(ctx, logical)
}

// coverageOf says, for each of queues (logical, each once), whether a
// running worker serves it.
func (s *Service) coverageOf(ctx context.Context, queues []string) ([]QueueWorkers, error) {
	ws, err := s.allWorkers(ctx)
	if err != nil {
		return nil, err
	}
	ws = s.withRuby(ctx, ws)
	out := make([]QueueWorkers, 0, len(queues))
	for _, q := range queues {
		out = append(out, coverage(ws, q))
	}
	return out, nil
}

// queuesNamed is how many next steps of one kind a retry names, one per
// queue or breaker: a worker to start, a queue to resume, a breaker to
// look at. A retry by filter may send its messages back to hundreds of
// queues; its workers list says which queues each concerns.
const queuesNamed = 10

// noteRetryWorkers adds to a retry's result whether workers serve the
// queues its messages went back to, those none serves first, and the next
// step for the first of them: a retry into a queue without workers does
// not run.
func (s *Service) noteRetryWorkers(ctx context.Context, r *DLQRetry) {
	if r.Retried == 0 || len(r.queues) == 0 {
		return
	}
	queues, err := s.logicalQueues(ctx, r.queues)
	if err != nil {
		return // the retry happened; a note it cannot make is no reason to fail it
	}
	cov, err := s.coverageOf(ctx, queues)
	if err != nil {
		return
	}
	slices.SortStableFunc(cov, func(a, b QueueWorkers) int { return cmp.Compare(boolRank(a.Served()), boolRank(b.Served())) })
	r.Workers = cov
	var starts []Hint
	for _, c := range cov {
		if !c.Served() {
			starts = append(starts, s.startHints(c)...)
		}
	}
	if len(starts) > queuesNamed {
		r.Notes = append(r.Notes, fmt.Sprintf("no running worker serves %d of the %d queues the messages %s back to: the next steps start one for the first %d",
			len(starts), len(cov), wentBack(r.DryRun), queuesNamed))
	}
	r.prepend(starts)
	s.noteRetryBreakers(ctx, r, queues)
	s.noteRetryPaused(ctx, r, queues)
}

// prepend puts the first queuesNamed of hints first among r's next steps.
func (r *DLQRetry) prepend(hints []Hint) {
	if len(hints) > 0 {
		r.Next = append(slices.Clip(hints[:min(len(hints), queuesNamed)]), r.Next...)
	}
}

// seeAlso adds h last to r's next steps, unless a step of its operation is
// there already: where to see what a list of r leaves out.
func (r *DLQRetry) seeAlso(h Hint) {
	if !slices.ContainsFunc(r.Next, func(n Hint) bool { return n.Op == h.Op && len(n.Args) == 0 }) {
		r.Next = append(r.Next, h)
	}
}

// seeHealth is where to see every queue a retry's lists leave out: after
// the retry, the health check names each whose messages wait.
var seeHealth = hint(OpHealth, "lists every queue with ready messages that no running worker serves (no_workers) and every paused queue (queue_paused), STALLED ones first")

// wentBack says where a retry's messages went, or in a dry run would go.
func wentBack(dryRun bool) string {
	if dryRun {
		return "would go"
	}
	return "went"
}

// fitWorkers lists fewer of the queues in r.Workers when the result would
// pass the response bound, the last ones (those a worker serves), and says
// how many it left out and where to see them all.
func (r *DLQRetry) fitWorkers(b Bounds) {
	if len(r.Workers) == 0 {
		return
	}
	// The note of queues left out, and how to see them (its Ask): after
	// a retry the health check (next) lists those no worker serves, and
	// the health check without the bound every one; a dry run changed
	// nothing for it to list, so the same dry run without the bound does.
	note := "%d of the %d queues the messages %s back to %s listed in workers (those no running worker serves first) so that the response stays under %d characters; the health check (next) lists those whose messages no running worker serves (no_workers)"
	kind, op := AskAll, OpHealth
	if r.DryRun {
		note = "%d of the %d queues the messages %s back to %s listed in workers (those no running worker serves first) so that the response stays under %d characters"
		kind, op = AskSameDryRun, OpDLQRetry
	}
	// The rest of the result as it will be: with room for how to see
	// them, as a front end words it, and the next step, and without
	// Moved, which gets the room left after.
	rest := *r
	rest.Workers, rest.Moved, rest.Outcomes = nil, nil, nil
	rest.Notes = append(slices.Clip(r.Notes), strings.Repeat("x", 370))
	if !r.DryRun {
		rest.seeAlso(seeHealth)
	}
	rest.WorkersOmitted = len(r.Workers)
	n := fitList(b, &r.Workers, rest)
	if n == 0 {
		return
	}
	r.WorkersOmitted = n
	if !r.DryRun {
		r.seeAlso(seeHealth)
	}
	askOp(&r.Notes, &r.Asks, kind, op, fmt.Sprintf(note,
		len(r.Workers), len(r.Workers)+n, wentBack(r.DryRun), plural.Of(len(r.Workers), "is", "are"), ResponseBudget))
}

// noteRetryPaused puts first among a retry's next steps the resume of
// each paused queue (logical, each once) its messages went back to, the first queuesNamed of
// them: they wait there, unread, until it is resumed, whatever the
// workers.
func (s *Service) noteRetryPaused(ctx context.Context, r *DLQRetry, queues []string) {
	settings, err := s.store.AllQueueSettings(ctx)
	if err != nil {
		return // as for the workers: the retry happened
	}
	var resumes []Hint
	for _, q := range queues {
		if settings[q].Paused {
			resumes = append(resumes, hint(OpQueueResume, fmt.Sprintf("queue %q is paused: the retried messages wait in it, unread, until it is resumed", q), "queue", q))
		}
	}
	if len(resumes) > queuesNamed {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of the queues the messages %s back to are paused: the next steps resume the first %d, and the health check (next) lists every paused queue",
			len(resumes), wentBack(r.DryRun), queuesNamed))
		r.seeAlso(seeHealth)
	}
	r.prepend(resumes)
}

// noteRetryBreakers adds to a retry's next steps the breakers that are not
// closed and that handlers of the queues its messages went back to use,
// the first queuesNamed of them: those messages wait for the breaker
// (snoozed, not failed), which would otherwise look like a retry that did
// nothing.
func (s *Service) noteRetryBreakers(ctx context.Context, r *DLQRetry, queues []string) {
	breakers, err := s.store.ListBreakers(ctx, "")
	if err != nil {
		return // as for the workers: the retry happened
	}
	var looks []Hint
	for _, b := range breakers {
		if b.State == store.BreakerClosed {
			continue
		}
		if q, ok := usedOn(runningUsers(b.Users, s.now()), queues); ok {
			looks = append(looks, hint(OpCircuits, fmt.Sprintf("breaker %q, which handlers of queue %q use, is %s: the retried jobs wait for it, snoozed, not failed, until a probe call succeeds",
				b.Name, q, strings.ReplaceAll(b.State, "_", "-")), "name", b.Name))
		}
	}
	if len(looks) > queuesNamed {
		r.Notes = append(r.Notes, fmt.Sprintf("%d breakers that handlers of those queues use are open or half-open: the next steps name the first %d, and the list of breakers (next) has them all, open ones first",
			len(looks), queuesNamed))
		r.seeAlso(hint(OpCircuits, "lists every breaker, open and half-open ones first"))
	}
	r.prepend(looks)
}

// usedOn returns the first of queues (logical) that one of users is on.
func usedOn(users []store.BreakerUser, queues []string) (string, bool) {
	for _, q := range queues {
		if slices.ContainsFunc(users, func(u store.BreakerUser) bool { return u.Queue == q }) {
			return q, true
		}
	}
	return "", false
}
