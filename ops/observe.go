package ops

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// RetryObserver is an engine.Observer that also watches messages retried
// out of a DLQ, as a tracer does to carry a message's trace across the
// retry. DLQRetry calls Retrying as each message moves (not in a dry run)
// with the trace context it carries; the one returned goes into the moved
// message's headers, and done is told where the message went, or why it
// did not move. It is called from several goroutines at once. A Retrying,
// or a done, that panics is logged (Options.Logger, at error) and the
// retry goes on without it, as the engine does with its observers.
type RetryObserver interface {
	engine.Observer
	Retrying(ctx context.Context, dlq string, id int64, carried store.TraceContext) (set store.TraceContext, done func(queue string, newID int64, err error))
}

// retryTrace chains the RetryObservers among observers into the store's
// hook; nil when there are none, so that headers move untouched. It runs
// on the store's goroutines, where an observer's panic would end the
// process: each call is guarded, its panic logged to log.
func retryTrace(observers []engine.Observer, log *slog.Logger) func(context.Context, string, int64, store.TraceContext) (store.TraceContext, func(string, int64, error)) {
	var ros []RetryObserver
	for _, o := range observers {
		if ro, ok := o.(RetryObserver); ok {
			ros = append(ros, ro)
		}
	}
	if len(ros) == 0 {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, dlq string, id int64, tc store.TraceContext) (store.TraceContext, func(string, int64, error)) {
		dones := make([]func(string, int64, error), 0, len(ros))
		for _, ro := range ros {
			guardObserver(log, ro, "Retrying", func() {
				next, done := ro.Retrying(ctx, dlq, id, tc)
				tc = next
				if done != nil {
					dones = append(dones, func(queue string, newID int64, err error) {
						guardObserver(log, ro, "Retrying's done", func() { done(queue, newID, err) })
					})
				}
			})
		}
		return tc, func(queue string, newID int64, err error) {
			for _, done := range dones {
				done(queue, newID, err)
			}
		}
	}
}

// guardObserver runs one call of an observer during a retry, recovering
// its panic: the observer's bug is logged, and the retry goes on.
func guardObserver(log *slog.Logger, ob engine.Observer, method string, call func()) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("pgbus: an observer panicked; the retry goes on without it: fix the observer",
				"observer", fmt.Sprintf("%T", ob), "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	call()
}
