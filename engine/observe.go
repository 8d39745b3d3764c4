package engine

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Observer watches a Client's work, for metrics, traces and logs. Its
// methods run on the Client's goroutines, for every message: they must
// return quickly and never block on the network. A method that panics
// there is logged (Config.Logger, at error) and the work goes on without
// it.
//
// An outcome is reported once it is written, and only then, once per
// delivery whose outcome is written: a dead letter once it is in the DLQ,
// a success once its message is archived (or deleted). A delivery whose
// outcome is not written (its write refused until a stop, say) is not
// reported: its message runs again, and that delivery's outcome is.
type Observer interface {
	// JobStarted is called before a job's handler runs (before its circuit
	// breaker is asked); the context it returns is the handler's, so a
	// tracer can start the attempt's span in it.
	JobStarted(ctx context.Context, job *Job) context.Context
	// JobFinished is called once a delivery's outcome is written, on the
	// goroutine that wrote it: the queue's writer of outcomes (a slow
	// JobFinished holds up the queue's writes), or its fetch loop for a
	// message settled without running (no attempts left, past its
	// deadline, or no handler for its kind), dead-lettered in the read's
	// own transaction. ctx is what JobStarted returned, or the worker's
	// context for a message settled without running. Finish's Elapsed
	// and Latency are the handler's run and the wait before it, not the
	// write's.
	//
	// A dead letter the database refuses for want of a privilege leaves
	// its message in the queue, its failure recorded, to run again after
	// its visibility timeout: that is what is written, and it is reported
	// as OutcomeRetried, with the visibility timeout as its Delay. The
	// dead letter is reported when it is written, on a later delivery.
	JobFinished(ctx context.Context, job *Job, f Finish)
}

// AbandonObserver is an Observer that is also told of a delivery whose
// outcome is not written, so JobFinished is not called for it: the worker
// stopped while its handler ran past the drain timeout, or while the
// write of its outcome failed; its message was read again meanwhile
// (another read holds it, whose delivery reports its own outcome); or its
// queue was dropped. Unless its queue is gone, the message runs again
// once its visibility timeout ends. A tracer ends the attempt's span here.
type AbandonObserver interface {
	JobAbandoned(ctx context.Context, job *Job)
}

// Outcomes of a delivery, as Finish.Outcome says them.
const (
	OutcomeSucceeded    = "succeeded"
	OutcomeRetried      = "retried"
	OutcomeDeadLettered = "dead_lettered"
	OutcomeDiscarded    = "discarded"
	OutcomeSnoozed      = "snoozed"
)

// Finish is how one delivery of a message ended.
type Finish struct {
	// Outcome is one of the Outcome constants.
	Outcome string
	// Reason is why a dead-lettered message died: store.ReasonMaxRetriesExceeded,
	// store.ReasonNonRetryable or store.ReasonDeadlineExceeded.
	Reason string
	// Err is what the handler returned, or why the message was settled
	// without running; nil on success and for a snooze by an open breaker.
	Err error
	// ErrorClass is Err's class ("" when Err is nil).
	ErrorClass string
	// Ran says whether the handler ran; Elapsed is how long it did.
	Ran     bool
	Elapsed time.Duration
	// Latency is how long the message waited from being enqueued (or
	// becoming visible again) to this delivery.
	Latency time.Duration
	// Delay is when a retried or snoozed message runs again, from now.
	Delay time.Duration
}

// observers calls each of a Client's observers in turn; none cost nothing.
// An observer that panics, or returns no context, is a mistake of its own:
// it is logged, and the job, the worker and the other observers go on.
type observers struct {
	list []Observer
	log  *slog.Logger
}

// guard runs one call of an observer during a job, recovering its panic.
func (o observers) guard(ob Observer, method string, call func()) {
	o.guardWork(ob, method, "job", call)
}

// guardWork runs one call of an observer during work ("job" or "send"),
// recovering its panic: the observer's bug is logged, and the work goes on.
func (o observers) guardWork(ob Observer, method, work string, call func()) {
	defer func() {
		if r := recover(); r != nil {
			o.log.Error("pgbus: an observer panicked; the "+work+" goes on without it: fix the observer",
				"observer", fmt.Sprintf("%T", ob), "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	call()
}

func (o observers) started(ctx context.Context, job *Job) context.Context {
	for _, ob := range o.list {
		o.guard(ob, "JobStarted", func() {
			if next := ob.JobStarted(ctx, job); next != nil {
				ctx = next
			} else {
				o.log.Error("pgbus: an observer's JobStarted returned a nil context; the job goes on with the context it was given: fix the observer",
					"observer", fmt.Sprintf("%T", ob))
			}
		})
	}
	return ctx
}

// observed is what the observers were told of a job's start, kept with
// its outcome until that outcome is written, when they are told its end.
type observed struct {
	ctx context.Context // what JobStarted returned
	job *Job
	a   attempt
}

// abandoned tells the AbandonObservers of a delivery whose outcome is not
// written.
func (o observers) abandoned(ctx context.Context, job *Job) {
	for _, ob := range o.list {
		if ab, ok := ob.(AbandonObserver); ok {
			o.guard(ob, "JobAbandoned", func() { ab.JobAbandoned(ctx, job) })
		}
	}
}

// finished tells the observers of a delivery's outcome, once written.
func (o observers) finished(ctx context.Context, job *Job, res result, a attempt) {
	if len(o.list) == 0 {
		return
	}
	f := Finish{Reason: res.reason, Ran: a.ran, Elapsed: a.elapsed, Latency: res.latency, Delay: res.delay}
	switch res.action {
	case actionSucceed:
		f.Outcome = OutcomeSucceeded
	case actionRetry:
		f.Outcome = OutcomeRetried
	case actionDeadLetter:
		f.Outcome = OutcomeDeadLettered
	case actionDiscard:
		f.Outcome = OutcomeDiscarded
	case actionSnooze:
		f.Outcome = OutcomeSnoozed
	}
	f.Err = a.err
	if f.Err == nil && res.failure != nil {
		f.Err = settledError{res.failure}
	}
	if f.Err != nil {
		f.ErrorClass = ErrorClass(f.Err)
	}
	for _, ob := range o.list {
		o.guard(ob, "JobFinished", func() { ob.JobFinished(ctx, job, f) })
	}
}

// settledError is the failure of a message settled without running.
type settledError struct{ f *store.Failure }

func (e settledError) Error() string      { return e.f.ErrorMessage }
func (e settledError) ErrorClass() string { return e.f.ErrorClass }
