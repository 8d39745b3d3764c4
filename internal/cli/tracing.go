package cli

import (
	"context"
	"log/slog"

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
// its own it would print a malformed one, credentials and all. The line
// that says tracing is on is logged at level: the long-running commands
// (work, serve, dashboard) ask first, at info, as their other start-up
// lines are; a one-shot command's stays at debug, out of its standard
// error unless asked for.
func (a *app) tracing(ctx context.Context, level slog.Level) ([]engine.Observer, error) {
	if !a.trace.done {
		tracing.SetLogger(a.log)
		observers, stop, err := runner.Tracing(ctx, a.log, level)
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
