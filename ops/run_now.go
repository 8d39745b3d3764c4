package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgbus/pgbus/store"
)

// QueueRunNowRequest asks to run now the messages of a queue that wait
// out a retry's backoff: Queue is the queue, or one priority level of it
// (orders_p1); Kind, when set, takes only the messages of that job kind;
// DryRun counts them and changes nothing.
type QueueRunNowRequest struct {
	Queue  string
	Kind   string
	DryRun bool
	// InFlight takes the messages in flight instead (read by a worker and
	// not settled, their visibility timeout not over), for after a
	// restore or a failover, when the workers that read them are gone and
	// they would wait out the timeout. A job a worker still runs is made
	// visible too, and runs twice.
	InFlight bool
	// Progress, when set, is called with the messages made visible so
	// far after each batch, and total 0: how many there are is not
	// counted first.
	Progress func(done, total int)
}

// QueueRunNow says how many messages a run-now made visible, or in a dry
// run would.
type QueueRunNow struct {
	Queue string `json:"queue"`
	// Kind is the job kind the call took, when it named one.
	Kind   string `json:"kind,omitempty"`
	DryRun bool   `json:"dry_run"`
	// InFlight says the call took the messages in flight, not the
	// retrying ones.
	InFlight bool `json:"in_flight,omitempty" jsonschema_description:"True when the call took the messages in flight, not those waiting to retry."`
	// Visible counts the messages made visible (in a dry run: that would
	// be).
	Visible int64  `json:"visible"`
	Next    []Hint `json:"next"`
	// Workers says whether a running worker serves the queue, when
	// messages were made visible (or would be): they run only if one does.
	Workers *QueueWorkers `json:"workers,omitempty"`
}

// QueueRunNow makes the messages of a queue that failed and wait for
// their next attempt (state retrying) visible now, so that workers run
// them without waiting out their backoff: once what failed them is
// fixed, minutes (or, with the polynomial strategy or a long Retry-After,
// hours) are not spent waiting. Messages in flight, waiting, scheduled
// (sent with a delay, snoozed, paced, given back) keep their times; the
// attempts already made still count. With InFlight it takes the messages
// in flight instead, whose attempt under way counts as made, as after a
// crash: the jobs a worker still runs run twice.
func (s *Service) QueueRunNow(ctx context.Context, req QueueRunNowRequest) (out QueueRunNow, err error) {
	args := func() any {
		args := map[string]any{"queue": req.Queue, "dry_run": req.DryRun}
		if req.Kind != "" {
			args["kind"] = req.Kind
		}
		if req.InFlight {
			args["in_flight"] = true
		}
		return args
	}
	ctx, end, err := s.enter(ctx, "QueueRunNow", writesUnlessDry(req.DryRun))
	if err != nil {
		return out, s.refusedByGate(ctx, OpQueueRunNow, req.DryRun, req.Check, args, err)
	}
	defer end()
	defer func() {
		if !req.DryRun || recordsDryRun(ctx) {
			s.record(ctx, OpQueueRunNow, args(), out, err)
		}
	}()
	defer s.explainWrite(ctx, &err, writesUnlessDry(req.DryRun), queueNow(req.Queue)) // runs before the audit entry
	if err := s.checkWriteIn(ctx, OpQueueRunNow); err != nil {
		return QueueRunNow{}, err
	}
	if err := req.Check(); err != nil {
		return QueueRunNow{}, err
	}
	opts := store.RunNowOptions{Kind: req.Kind, DryRun: req.DryRun, InFlight: req.InFlight}
	if req.Progress != nil {
		opts.Progress = func(done int64) { req.Progress(int(done), 0) }
	}
	n, err := s.store.RunNow(ctx, req.Queue, opts)
	if errors.Is(err, ErrNotFound) {
		if dropped := s.droppedQueue(ctx, req.Queue); dropped != nil {
			return QueueRunNow{}, dropped
		}
	}
	if err != nil && n > 0 {
		// Stopped partway, the batches done stay done: the result and
		// the error count them.
		again := QueueRunNowRequest{Queue: req.Queue, Kind: req.Kind, InFlight: req.InFlight}
		return QueueRunNow{Queue: req.Queue, Kind: req.Kind, InFlight: req.InFlight, Visible: n, Next: []Hint{}}, partlyDone(err, "running now", n, 0, nil, again.Hint(""))
	}
	if err != nil {
		return QueueRunNow{}, explain(err, hint(OpQueueStats, "lists the queues there are"))
	}
	out = QueueRunNow{Queue: req.Queue, Kind: req.Kind, InFlight: req.InFlight, DryRun: req.DryRun, Visible: n, Next: []Hint{}}
	switch {
	case n > 0 && req.DryRun && req.InFlight:
		out.Next = append(out.Next, QueueRunNowRequest{Queue: req.Queue, Kind: req.Kind, InFlight: true}.Hint(
			"the same call, not as a dry run, makes them visible now: only once the workers that read them are gone (a restore, a failover), as a job a worker still runs runs twice"))
	case n > 0 && req.DryRun:
		out.Next = append(out.Next, QueueRunNowRequest{Queue: req.Queue, Kind: req.Kind}.Hint("the same call, not as a dry run, makes them visible now"))
	case n > 0:
		out.Next = append(out.Next, hint(OpQueueMessages, "watch them run; if they fail again they wait for their next attempt or go to the DLQ", "queue", req.Queue))
	default:
		out.Next = append(out.Next, s.runNowNoneHint(ctx, req))
	}
	if n > 0 {
		s.noteRunNowWorkers(ctx, &out)
	}
	return out, nil
}

// PreviewRunNow is what QueueRunNow would do with req now, as its dry run
// says it, on a read-only service too and recorded in no audit entry, as
// PreviewRetry is a retry's. Its result is a dry run's, whatever
// req.DryRun says.
func (s *Service) PreviewRunNow(ctx context.Context, req QueueRunNowRequest) (QueueRunNow, error) {
	req.DryRun = true
	return s.QueueRunNow(withPreview(ctx), req)
}

// noteRunNowWorkers adds to a run-now's result whether a running worker
// serves the queue, and puts first the step without which its messages
// still do not run: a worker to start, or the queue to resume. Without
// what it reads the messages are visible all the same: the note is left
// out.
func (s *Service) noteRunNowWorkers(ctx context.Context, out *QueueRunNow) {
	if cov, err := s.queueCoverage(ctx, []string{out.Queue}); err == nil {
		out.Workers = &cov[0]
		if !cov[0].Served() {
			out.Next = append(s.startHints(cov[0]), out.Next...)
		}
	}
	logical := out.Queue
	if l, err := s.logicalQueues(ctx, []string{out.Queue}); err == nil {
		logical = l[0] // a priority level is paused with its queue
	}
	if settings, err := s.store.AllQueueSettings(ctx); err == nil && settings[logical].Paused {
		out.Next = append([]Hint{hint(OpQueueResume, fmt.Sprintf("queue %q is paused: the messages made visible wait in it, unread, until it is resumed", logical), "queue", logical)}, out.Next...)
	}
}

// runNowNoneHint is the next step of a run-now that found nothing: when
// it named a kind and messages of other kinds wait to retry (a kind
// mistyped, or named as the wrong one), the listing that shows their
// kinds; otherwise what the queue holds.
func (s *Service) runNowNoneHint(ctx context.Context, req QueueRunNowRequest) Hint {
	if req.Kind != "" {
		state, words, those := store.StateRetrying, "waits to retry", "waiting"
		if req.InFlight {
			state, words, those = store.StateInFlight, "is in flight", "in flight"
		}
		if others, err := s.store.RunNow(ctx, req.Queue, store.RunNowOptions{DryRun: true, InFlight: req.InFlight}); err == nil && others > 0 {
			return hint(OpQueueMessages, fmt.Sprintf("no message of kind %q %s, while other kinds have %d %s: this lists them with their kinds",
				clip(req.Kind, 60), words, others, those), "queue", req.Queue, "state", state)
		}
	}
	return hint(OpQueueMessages, "shows what the queue holds, and the state of each message", "queue", req.Queue)
}
