package cli

import (
	"context"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/tracing"
)

// traceSetup is a command's tracing, set up once, on first need, as the
// OTEL_* environment says: its observers go to the workers and the
// operations layer, and Main flushes its spans when the command ends.
type traceSetup struct {
	done      bool
	observers []engine.Observer
	stop      func()
}

// tracing returns the command's tracing observers, setting tracing up on
// the first call: none when the environment leaves it off. The SDK logs to
// the command's log, redacted, before it reads the OTEL_* variables: on
// its own it would print a malformed one, credentials and all.
func (a *app) tracing(ctx context.Context) ([]engine.Observer, error) {
	if !a.trace.done {
		tracing.SetLogger(a.log)
		observers, stop, err := runner.Tracing(ctx, a.log)
		if err != nil {
			return nil, usageError{err}
		}
		a.trace = traceSetup{done: true, observers: observers, stop: stop}
	}
	return a.trace.observers, nil
}

// flush exports the spans not exported yet, once the command has ended.
func (t *traceSetup) flush() {
	if t.stop != nil {
		t.stop()
	}
}
