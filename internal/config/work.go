package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// DefaultConcurrency is how many jobs of a queue run at once when nothing
// says otherwise.
const DefaultConcurrency = 10

// WorkQueue is one queue a worker process works, with everything settled.
type WorkQueue struct {
	Name        string
	Concurrency int
	Handler     handlers.Spec
	// Settings are applied to the queue (created when missing) before work
	// starts; only queues declared in the configuration file have them.
	Settings Settings
	Declared bool
}

// WorkPlan is what the command line and environment say about the queues
// a process works; the file says the rest.
type WorkPlan struct {
	// Specs name the queues, each NAME or NAME:CONCURRENCY; none means the
	// file's queues.
	Specs []string
	// Source is where Specs came from (a flag or an environment variable),
	// for errors.
	Source string
	// Handler is the handler type of every queue; "" takes each queue's
	// handler from the file.
	Handler string
	// HandlerFrom is where Handler came from, " (from ...)", or "" for the
	// command line, for errors.
	HandlerFrom string
	// Concurrency applies to every queue that NAME:N does not set; 0 takes
	// the file's, else DefaultConcurrency.
	Concurrency int
}

// WorkQueues settles the queues to work: those of p.Specs, else the file's,
// each with its concurrency and handler, the handler built once so that a
// bad one, or one whose program this machine lacks, fails before anything
// starts.
func (f *File) WorkQueues(p WorkPlan) ([]WorkQueue, error) {
	var out []WorkQueue
	seen := map[string]bool{}
	for _, s := range p.Specs {
		q, err := f.parseQueueSpec(strings.TrimSpace(s), p)
		if err != nil {
			return nil, err
		}
		if seen[q.Name] {
			return nil, fmt.Errorf("%s names queue %q twice; give it once", p.Source, q.Name)
		}
		seen[q.Name] = true
		out = append(out, q)
	}
	if len(p.Specs) == 0 {
		for _, name := range f.QueueNames() {
			fq := f.Queues[name]
			q := WorkQueue{Name: name, Concurrency: p.concurrencyFor(fq), Settings: fq.Settings, Declared: true}
			if err := f.handlerFor(p, &q, fq, true); err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	if err := f.checkHandlers(out, p); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckHandlers checks every handler the file configures, so that an
// unknown handler type or a bad option fails at start, naming the file and
// key, whatever the command. It does not look for what a handler names on
// this machine (an exec handler's program and dir): every command reads
// the file, but only those that run workers need the programs, and
// WorkQueues looks for those of the queues a worker works.
func (f *File) CheckHandlers() error {
	for _, name := range f.QueueNames() {
		if h := f.Queues[name].Handler; h != nil {
			if err := handlers.Check(*h); err != nil {
				return f.handlerError(name, *h, err)
			}
		}
	}
	return nil
}

// checkHandlers builds the handler of every queue once, and refuses
// handlers that name one circuit breaker with different settings.
func (f *File) checkHandlers(queues []WorkQueue, p WorkPlan) error {
	type use struct {
		queue string
		cfg   store.BreakerConfig
	}
	breakers := map[string]use{}
	for _, q := range queues {
		_, opts, err := handlers.Build(q.Handler)
		if err != nil {
			if p.Handler != "" {
				return fmt.Errorf("queue %s: handler %q%s: %v; a handler that takes options (http's url, exec's command) is configured in the file, under queues.%s.handler", q.Name, p.Handler, p.HandlerFrom, err, q.Name)
			}
			return f.handlerError(q.Name, q.Handler, err)
		}
		b := opts.Breaker
		if b == nil {
			continue
		}
		if prev, ok := breakers[b.Name]; ok && prev.cfg != *b {
			return f.breakerConflict(b.Name, prev.queue, prev.cfg, q.Name, *b)
		}
		breakers[b.Name] = use{q.Name, *b}
	}
	return nil
}

// breakerConflict is the refusal of queue b's handler, whose circuit
// breaker name is queue a's with other settings: which settings the
// shared breaker took would depend on which process started last.
func (f *File) breakerConflict(name, a string, ac store.BreakerConfig, b string, bc store.BreakerConfig) error {
	first := "queue " + a
	if line := f.lineOf("queues." + a + ".handler.breaker"); line > 0 {
		first += fmt.Sprintf(" (line %d)", line)
	}
	return f.Errorf("queues."+b+".handler.breaker",
		"circuit breaker %q is configured twice with different settings: %s for %s, %s for queue %s; handlers that name one breaker share it, as http handlers of one host:port do unless their breaker has a name: give their breakers the same settings, or one a name of its own (breaker: {name: %s})",
		name, breakerSettings(ac), first, breakerSettings(bc), b, b)
}

// breakerSettings writes a breaker's settings as its block's keys.
func breakerSettings(c store.BreakerConfig) string {
	return fmt.Sprintf("failure_threshold %d, cool_off %s, max_cool_off %s", c.FailureThreshold, ops.FormatAge(c.CoolOff), ops.FormatAge(c.MaxCoolOff))
}

// handlerError is err, a problem with the handler block h of queue name,
// about the key it is about, at its line: the option's
// (queues.orders.handler.on_exit.3.backoff), or the type's for a type
// there is not, else the block's.
func (f *File) handlerError(name string, h handlers.Spec, err error) error {
	block := "queues." + name + ".handler"
	if !slices.Contains(handlers.Types(), h.Type) {
		return f.Errorf(block+".type", "%v", err)
	}
	key, at, reason, ok := handlers.OptionProblem(err)
	if !ok {
		return f.Errorf(block, "%v", err)
	}
	// A header's or a variable's name in the reason, after its parent
	// key, as the decoder's errors of them say it: after
	// "...headers.X-Api-Key: " the reason would read as the header's
	// value, and its first word be redacted wherever the error is shown.
	for _, m := range []struct{ parent, what string }{{"headers", "header"}, {"env", "variable"}} {
		if name, ok := strings.CutPrefix(key, m.parent+"."); ok {
			return f.errorAt(block+"."+m.parent, block+"."+at, "in "+m.what+" "+name+", "+reason)
		}
	}
	return f.errorAt(block+"."+key, block+"."+at, reason)
}

// parseQueueSpec reads NAME or NAME:CONCURRENCY.
func (f *File) parseQueueSpec(s string, p WorkPlan) (WorkQueue, error) {
	name, conc, hasConc := strings.Cut(s, ":")
	if err := store.ValidateQueueName(name); err != nil {
		return WorkQueue{}, fmt.Errorf("%s %q: %w", p.Source, s, err)
	}
	fq, declared := f.Queue(name)
	q := WorkQueue{Name: name, Concurrency: p.concurrencyFor(fq), Settings: fq.Settings, Declared: declared}
	if hasConc {
		n, err := strconv.Atoi(conc)
		if err != nil || n < 1 || n > engine.MaxConcurrency {
			return WorkQueue{}, fmt.Errorf("%s %q: concurrency must be a whole number from 1 to %d, as in %s:10", p.Source, s, engine.MaxConcurrency, name)
		}
		q.Concurrency = n
	}
	return q, f.handlerFor(p, &q, fq, declared)
}

func (p WorkPlan) concurrencyFor(fq Queue) int {
	switch {
	case p.Concurrency > 0:
		return p.Concurrency
	case fq.Concurrency > 0:
		return fq.Concurrency
	}
	return DefaultConcurrency
}

// handlerFor settles the handler of q, whose queue the file configures as
// fq when declared.
func (f *File) handlerFor(p WorkPlan, q *WorkQueue, fq Queue, declared bool) error {
	switch {
	case p.Handler != "" && fq.Handler != nil && fq.Handler.Type == p.Handler:
		q.Handler = *fq.Handler // the file's, with its options
	case p.Handler != "" && fq.Handler != nil:
		// Replacing a handler the file configures would run the queue's
		// jobs elsewhere (a leftover PGBUS_HANDLER=demo would archive real
		// jobs unrun): that is never what a deployment means.
		return fmt.Errorf("queue %s has %s handler in the configuration file, and --handler %s%s would replace it: drop --handler (or unset PGBUS_HANDLER) to use the file's, or name a queue the file does not configure",
			q.Name, withArticle(fq.Handler.Type), p.Handler, p.HandlerFrom)
	case p.Handler != "":
		q.Handler = handlers.Spec{Type: p.Handler}
	case fq.Handler != nil:
		q.Handler = *fq.Handler
	case f.Path() != "" && !declared && len(f.Queues) > 0:
		// A file was given: most likely the name is a typo of a queue it
		// configures.
		return fmt.Errorf("the configuration file %s configures no queue %q (it configures: %s), so queue %s has no handler: name one of them, add it to the file (queues.%s.handler; see pgbus help config), or pass --handler %s to run the simulated downstream of pgbus demo",
			f.Path(), q.Name, strings.Join(f.QueueNames(), ", "), q.Name, q.Name, handlers.TypeDemo)
	case f.Path() != "":
		return fmt.Errorf("queue %s has no handler in the configuration file %s: give it one there (queues.%s.handler, e.g. {type: http, url: https://...} or {type: exec, command: [...]}; see pgbus help config), or pass --handler %s to run the simulated downstream of pgbus demo",
			q.Name, f.Path(), q.Name, handlers.TypeDemo)
	default:
		return fmt.Errorf("queue %s has no handler: give it one in a configuration file passed with --config (queues.%s.handler, e.g. {type: http, url: https://...} or {type: exec, command: [...]}; see pgbus help config), or pass --handler %s to run the simulated downstream of pgbus demo",
			q.Name, q.Name, handlers.TypeDemo)
	}
	return nil
}

// withArticle is a handler type with the article it reads with: "an
// exec", "an http" (said letter by letter), "a demo".
func withArticle(typ string) string {
	if typ != "" && (strings.ContainsRune("aeiou", rune(typ[0])) || typ == "http" || typ == "https") {
		return "an " + typ
	}
	return "a " + typ
}
