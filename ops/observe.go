package ops

import (
	"context"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// RetryObserver is an engine.Observer that also watches messages retried
// out of a DLQ, as a tracer does to carry a message's trace across the
// retry. DLQRetry calls Retrying as each message moves (not in a dry run)
// with the trace context it carries; the one returned goes into the moved
// message's headers, and done is told where the message went, or why it
// did not move. It is called from several goroutines at once.
type RetryObserver interface {
	engine.Observer
	Retrying(ctx context.Context, dlq string, id int64, carried store.TraceContext) (set store.TraceContext, done func(queue string, newID int64, err error))
}

// retryTrace chains the RetryObservers among observers into the store's
// hook; nil when there are none, so that headers move untouched.
func retryTrace(observers []engine.Observer) func(context.Context, string, int64, store.TraceContext) (store.TraceContext, func(string, int64, error)) {
	var ros []RetryObserver
	for _, o := range observers {
		if ro, ok := o.(RetryObserver); ok {
			ros = append(ros, ro)
		}
	}
	if len(ros) == 0 {
		return nil
	}
	return func(ctx context.Context, dlq string, id int64, tc store.TraceContext) (store.TraceContext, func(string, int64, error)) {
		dones := make([]func(string, int64, error), 0, len(ros))
		for _, ro := range ros {
			var done func(string, int64, error)
			if tc, done = ro.Retrying(ctx, dlq, id, tc); done != nil {
				dones = append(dones, done)
			}
		}
		return tc, func(queue string, newID int64, err error) {
			for _, done := range dones {
				done(queue, newID, err)
			}
		}
	}
}
