package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pgbus/pgbus/store"
)

// OwnWorkers is the state of the workers a process runs beside its
// operations layers, shared by them (Options.OwnWorkers), so that the
// health verdict of each says when those workers stopped on an error: the
// process still answers, but runs no job. The zero value is workers that
// did not stop.
type OwnWorkers struct {
	mu     sync.Mutex
	queues []string
	err    error
}

// stopped returns the queues of the workers and the error they stopped
// on, or a nil error while they did not.
func (w *OwnWorkers) stopped() ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queues, w.err
}

// WorkersStopped records that the workers this process runs on queues
// stopped on err, an error that ended their run (a database that does not
// answer for a while does not: they ride it out), and returns the reason
// the health verdict gives from then on: workers_stopped, STALLED, naming
// the queues, the error and what to do. Only the first stop is kept: the
// workers are not started again until the process restarts.
func (s *Service) WorkersStopped(queues []string, err error) HealthReason {
	if err == nil {
		err = errors.New("no error was given")
	}
	w := s.opts.OwnWorkers
	w.mu.Lock()
	if w.err == nil {
		w.queues, w.err = slices.Clone(queues), err
	}
	w.mu.Unlock()
	r, _ := s.StoppedWorkers()
	return r
}

// StoppedWorkers returns the workers_stopped reason while the workers of
// this process stopped on an error.
func (s *Service) StoppedWorkers() (HealthReason, bool) {
	queues, err := s.opts.OwnWorkers.stopped()
	if err == nil {
		return HealthReason{}, false
	}
	what := "its workers"
	if len(queues) > 0 {
		what = "its workers of " + quoteList(queues)
	}
	todo := "mend the cause, then restart this process: its workers do not start again on their own"
	role := cmp.Or(s.store.User(), "<role>")
	switch {
	case store.LimitOf(err) != store.NoLimit:
		if lim := ExplainLimit(err, role); lim != nil {
			err = lim
		}
		todo = "then restart this process: its workers do not start again on their own"
	case store.IsPermissionDenied(err):
		todo = fmt.Sprintf("the database role %s lacks a privilege workers need: run as the role that owns the pgbus schemas: %s; then restart this process (its workers do not start again on their own)",
			role, store.OperatorGrants(role))
	}
	msg, _ := RedactText(fmt.Sprintf("this process still answers, but %s stopped on an error and run no job: %v; %s", what, err, todo))
	return HealthReason{Status: HealthStalled, Code: "workers_stopped", Message: msg,
		Next: []Hint{hint(OpWorkers, "shows the worker processes that still run, and which queues they serve")}}, true
}

// withStoppedWorkers adds the workers_stopped reason to h, first, when
// the workers of this process stopped on an error; a verdict better than
// STALLED becomes STALLED.
func (s *Service) withStoppedWorkers(h *Health) {
	r, ok := s.StoppedWorkers()
	if !ok {
		return
	}
	h.Reasons = append([]HealthReason{r}, h.Reasons...)
	if h.Status != HealthUnreachable {
		h.Status = HealthStalled
	}
}

// checkStoppedElsewhere adds, for each queue no running worker serves,
// the reason workers_stopped when the last process that served it
// stopped on an error (a start refused: a queue missing, a privilege the
// role lacks), which its row in the registry records: the health of every
// process says so, not only that of the process that stopped, which alone
// knew. A queue of stats that does not exist (a misspelled name, a queue
// dropped since) stalls nothing, since nothing waits in it: the stop is a
// NOTICE there, which says to create the queue if that name was meant; a
// queue created after the stop is STALLED as any other. The queues of
// this process's own stopped workers are left to its own reason
// (withStoppedWorkers).
func (s *Service) checkStoppedElsewhere(ctx context.Context, h *Health, ws Workers, stats []store.QueueStats) {
	own, ownErr := s.opts.OwnWorkers.stopped()
	exists := existing(stats)
	last := map[string]WorkerStatus{}
	for _, w := range ws.Workers {
		for _, q := range w.Queues {
			if prev, ok := last[q]; !ok || w.HeartbeatAt.After(prev.HeartbeatAt) {
				last[q] = w
			}
		}
	}
	queues := slices.Sorted(maps.Keys(last))
	for _, q := range queues {
		w := last[q]
		if w.Status != WorkerStopped || w.StopError == "" || ownErr != nil && slices.Contains(own, q) {
			continue
		}
		cov := coverage(ws, q)
		if cov.Served() {
			continue
		}
		ago := time.Duration(w.HeartbeatAgeSeconds * float64(time.Second)).Round(time.Second)
		if !exists[q] {
			msg, _ := RedactText(fmt.Sprintf("queue %q does not exist, so nothing waits in it: the worker process %s on %s, the last that named it, stopped on an error %s ago: %s; if that name was meant, create the queue, then start its workers again; this note goes 24 hours after the stop",
				q, w.ID, w.Hostname, ago, shownStopError(w.StopError)))
			h.add(HealthNotice, "workers_stopped", q, msg, s.createAgainHint(ctx, q, "creates the queue, if that name was meant; then start its workers"),
				hint(OpWorkers, "shows the worker processes, and which queues they serve"))
			continue
		}
		msg, _ := RedactText(fmt.Sprintf("queue %q: the worker process %s on %s, the last that served it, stopped on an error %s ago, and no running worker serves the queue: %s; mend the cause, then start its workers again: they do not start again on their own",
			q, w.ID, w.Hostname, ago, shownStopError(w.StopError)))
		h.add(HealthStalled, "workers_stopped", q, msg, append([]Hint{hint(OpWorkers, "shows the worker processes, and which queues they serve")}, s.startHints(cov)...)...)
	}
}
