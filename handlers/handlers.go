// Package handlers holds the handlers built into the pgbus binary, which a
// configuration file or the --handler flag attaches to a queue: demo
// (a flaky simulated downstream for the quick start), http and exec.
//
// Each handler type registers a Builder under its name. Build checks a
// Spec (a handler block of the configuration file, or one a Go program
// fills in) and returns the engine handler it describes, ready for
// engine.Client.HandleQueue; the command line calls it for every queue a
// worker works before anything starts, so that a bad block fails at once.
// Check checks a block without looking for what it names on this machine,
// for the commands that run no handler.
//
// The exec handler's command inherits the worker's environment but not the
// worker's database login: DATABASE_URL, PGPASSWORD, PGPASSFILE and the
// other variables libpq reads (WithheldEnv lists them) are left out unless
// the block's env option sets them, as are the worker's own trace context
// and its PGBUS_ variables. The command gets the job's details
// (PGBUS_QUEUE, PGBUS_MSG_ID, ...) and, when tracing is on, the attempt's
// trace context in TRACEPARENT and TRACESTATE, as the http handler sends it
// in its traceparent and tracestate headers.
//
// The exec handler dead-letters a command that exits with a code no option
// names, as the program's verdict on its payload, but retries one killed by
// a signal, or whose shell reports so (exit code 128+N, 129..192), under
// the queue's retry policy: the kernel's OOM killer, an operator or a
// supervisor stopped it (ExecOptions.RetrySignals).
package handlers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pgbus/pgbus/engine"
)

// Builder turns a Spec into a handler and its options. It rejects
// options its type does not know.
type Builder func(spec Spec) (engine.HandlerFunc, engine.HandlerOptions, error)

// handlerType is a registered handler type.
type handlerType struct {
	build Builder
	// check checks a spec as build does but without looking for what it
	// names on this machine; nil when build looks for nothing.
	check   func(spec Spec) error
	options any // its options struct, documented by Docs
	summary string
}

var registry = map[string]handlerType{
	TypeDemo: {build: buildDemo, options: DemoOptions{}, summary: "the flaky simulated downstream of pgbus demo; each job's payload decides what it does"},
}

// Types lists the handler types there are, sorted.
func Types() []string {
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Build returns the handler a spec describes. Errors say what to change;
// the caller adds where (file, key).
func Build(spec Spec) (engine.HandlerFunc, engine.HandlerOptions, error) {
	r, ok := registry[spec.Type]
	if !ok {
		return nil, engine.HandlerOptions{}, fmt.Errorf("unknown handler type %q; use one of: %s", spec.Type, strings.Join(Types(), ", "))
	}
	fn, opts, err := r.build(spec)
	if err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	if spec.Timeout > 0 && opts.Timeout == 0 {
		opts.Timeout = spec.Timeout.D()
	}
	return fn, opts, nil
}

// Check reports what Build would about a spec's type and options, without
// looking for what it names on this machine: the exec handler's program
// and dir. It is for the commands that read a configuration file but run
// no handler, on a machine that may well lack the programs a worker's has
// (an operator's laptop sharing the workers' file): a malformed block
// fails there too, a program absent from it does not.
func Check(spec Spec) error {
	r, ok := registry[spec.Type]
	if !ok {
		return fmt.Errorf("unknown handler type %q; use one of: %s", spec.Type, strings.Join(Types(), ", "))
	}
	if r.check != nil {
		return r.check(spec)
	}
	_, _, err := r.build(spec)
	return err
}
