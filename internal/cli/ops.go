package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/demo"
	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// AuditClient is the client name of the CLI's entries in the audit log.
const AuditClient = "cli"

// service returns the operations layer over db as the CLI uses it: the
// person at the terminal has the database, so payloads are shown when a
// command asks for them, whole (secrets still redacted).
func (a *app) service(db *dbopen.DB) (*ops.Service, error) {
	svc, err := ops.New(db.Store, ops.Options{AllowPayloads: true, SafeFields: a.safeFields(nil), Bounds: ops.FullBounds, Logger: a.log,
		Unrecorded: a.stderr, Observers: a.trace.observers, Handlers: a.queueHandlers(), DatabaseCallTimeout: a.callTimeout, Gate: a.gate, OwnWorkers: a.ownWorkers})
	if err != nil {
		return nil, usageError{fmt.Errorf("%w (the safe fields of %s or of safe_fields in the configuration file)", err, EnvSafeFields)}
	}
	return svc, nil
}

// queueHandlers are the handlers this CLI knows queues to run with, for
// the next steps that start a worker: the demo's queues run with the demo
// handler, and the configuration file's queues with the handler it gives
// them (which wins, as it does in pgbus work).
func (a *app) queueHandlers() map[string]string {
	out := map[string]string{demo.Orders: "demo", demo.Emails: "demo"}
	for _, name := range a.cfg.QueueNames() {
		if q, _ := a.cfg.Queue(name); q.Handler != nil {
			out[name] = ops.HandlerConfigured
		}
	}
	return out
}

// session is an open database and the operations layer over it.
type session struct {
	db  *dbopen.DB
	ops *ops.Service
	// stop is the command's context: a stop signal ends it, and with it
	// the wait for the audit log to take what it holds.
	stop context.Context
	// unready, for a session of openServing left to runner.WhenReady on
	// a database that answers, is why its schema could not be readied.
	unready error
	// down, for a session of openServing left to runner.WhenReady, is
	// why the database could not be asked at start.
	down error
}

// open opens the database for a command that reads, or writes rows but no
// tables, checking that the schema is current without changing it, and the
// operations layer over it; ctx names the CLI as the client of what it
// records in the audit log.
func (a *app) open(ctx context.Context) (context.Context, *session, error) {
	return a.openSession(ctx, false)
}

// openMigrated is open for the commands that create queues or run workers:
// it migrates the schema first.
func (a *app) openMigrated(ctx context.Context) (context.Context, *session, error) {
	return a.openSession(ctx, true)
}

func (a *app) openSession(ctx context.Context, migrate bool) (context.Context, *session, error) {
	if _, err := a.tracing(ctx, slog.LevelDebug); err != nil {
		return ctx, nil, err
	}
	if err := a.settleCallTimeout(); err != nil {
		return ctx, nil, err
	}
	db, err := a.openDB(ctx, migrate)
	if err != nil {
		return ctx, nil, err
	}
	svc, err := a.service(db)
	if err != nil {
		db.Close()
		return ctx, nil, err
	}
	return ops.WithCaller(ctx, ops.Caller{Client: AuditClient, Transport: ops.TransportCLI}), &session{db: db, ops: svc, stop: ctx}, nil
}

// openServing is openSession for pgbus serve and pgbus dashboard, which
// answer agents and people while their database does not: a database
// that answers is readied at once, as openSession does; one that does not
// answer, or refuses this process's connections, is left to
// runner.WhenReady (pending), the session's calls held by a.gate
// meanwhile. Whether it answers is asked within the database call timeout
// (dbopen.DB.Ping): PgBouncer, paused or without a server connection to
// give, takes the connection and would otherwise hold the start until its
// query_wait_timeout. A schema that cannot be readied on a database that
// answers (missing, older than this pgbus, beyond the role's reach to
// migrate) is left to runner.WhenReady too, which tries again until
// someone migrates it: an MCP client sees nothing of an exit but its
// transport closing, and a person nothing but a page that does not load.
// The session's unready says why, the calls held saying it too. Only what
// waiting cannot cure fails at once: a URL that cannot be read, the
// embedded PostgreSQL that cannot start, a schema only another pgbus
// reads (dbopen.Permanent).
func (a *app) openServing(ctx context.Context, migrate bool) (_ context.Context, _ *session, pending bool, _ error) {
	if _, err := a.tracing(ctx, slog.LevelInfo); err != nil { // serve and dashboard run long
		return ctx, nil, false, err
	}
	if err := a.settleCallTimeout(); err != nil {
		return ctx, nil, false, err
	}
	db, err := a.connectBy(ctx, dbopen.Dial)
	if err != nil {
		return ctx, nil, false, err
	}
	a.role = db.Role()
	a.gate = ops.NewGate()
	var unready error
	pingErr := db.Ping(ctx)
	if pingErr == nil {
		// Nothing uses the Store yet: its pool may be opened again,
		// fitted to the connection limits of the role and database.
		db.FitPool(ctx)
	}
	if err := pingErr; err != nil {
		a.gate.Hold(err)
		pending = true
	} else if err := a.prepare(ctx, db, migrate); err != nil {
		if dbopen.Permanent(err) || ctx.Err() != nil {
			db.Close()
			return ctx, nil, false, err
		}
		// As runner.WhenReady holds the calls for each failure of its
		// tries, and tries again.
		a.gate.Hold(err)
		pending, unready = true, err
	} else {
		a.gate.Open()
	}
	svc, err := a.service(db)
	if err != nil {
		db.Close()
		return ctx, nil, false, err
	}
	return ops.WithCaller(ctx, ops.Caller{Client: AuditClient, Transport: ops.TransportCLI}), &session{db: db, ops: svc, stop: ctx, unready: unready, down: pingErr}, pending, nil
}

// downWords is how a serving process's start says that its database
// could not be asked, naming what of it: the server without a free
// connection slot (too_many_connections), or one that does not answer
// yet; and what to do, naming how the URL was given.
func (a *app) downWords(cmd string, sess *session, serving string) (msg string, attrs []any) {
	attrs = []any{"where", sess.db.Where(), "version", buildinfo.Describe()}
	if dbopen.IsCrowded(sess.down) {
		advice := dbopen.CrowdedAdvice
		if w := a.urlWords(); w != "" {
			advice = strings.ReplaceAll(advice, storeURLWords, w)
		}
		return cmd + ": the database server has no free connection slots for this process (too many connections: SQLSTATE 53300, too_many_connections), so it refuses its connections; " +
			serving + ", and connecting in the background as other clients let theirs go. To end it, " + advice, append(attrs, "err", a.errorLine(sess.down, cmd))
	}
	return cmd + ": the database does not answer yet; " + serving + ", and connecting in the background", attrs
}

// Close writes what the command could not record in the audit log yet,
// trying for a bounded time or until a stop signal (the rest is printed
// on stderr), then closes the database.
func (s *session) Close() {
	s.ops.Close(s.stop)
	s.db.Close()
}

// errorLine renders an error of the command self (such as "pgbus
// health") for stderr with its next steps as commands, those --json
// prints: an operation's own, or those of what happened (the health check
// for a database that does not answer or a failure nothing explained).
func (a *app) errorLine(err error, self string) string {
	steps := stepsBeyond(err, self)
	if len(steps) == 0 {
		return err.Error()
	}
	return err.Error() + ": see " + a.commands(steps, " or ")
}

// stepsBeyond is the next steps of err, a failure of the command self,
// without self as it stands: pgbus health that cannot reach the database
// is not told to see pgbus health. A command given up while another
// session held a lock it waited for (ops.ErrLockWait) keeps itself, to run
// once that session ended, as its error says: pgbus migrate is told to
// migrate again. So does a migration cut off by a setting of the role's,
// to run once that is reset (ops.ExplainMigration).
func stepsBeyond(err error, self string) []ops.Hint {
	steps := nextSteps(err)
	if errors.Is(err, ops.ErrLockWait) {
		return steps
	}
	return slices.DeleteFunc(slices.Clone(steps), func(h ops.Hint) bool { return h.Op != ops.OpMigrate && vocab.Command(h) == self })
}

func (a *app) commands(hints []ops.Hint, sep string) string {
	out := make([]string, len(hints))
	for i, h := range hints {
		out[i] = a.command(h)
	}
	return strings.Join(out, sep)
}

// command is h as a command line, with the global flags this command was
// given on its command line (carried): a next step copied without the
// --database-url or --data-dir of the command that printed it would run
// against another database, and without its --config without its
// handlers.
func (a *app) command(h ops.Hint) string {
	return a.carried(vocab.Command(h))
}

// carried is line, a command line, with the global flags this command was
// given on its command line after it, when it runs pgbus.
func (a *app) carried(line string) string { return vocab.WithFlags(line, a.carry) }

// carriedFlags are the global flags a next step keeps when they were
// given on the command line, and how each is written there.
var carriedFlags = []struct {
	name string
	show func(string) string
}{
	// Paths as absolute ones: a step run from another directory would
	// not find the file, or find another one, with another database.
	{"config", absoluteQuoted},
	{"data-dir", absoluteQuoted},
	// Its password and the query's parameters that may be credentials
	// stay out of the output: a step copied with them redacted fails to
	// connect rather than use another database. Those that name the
	// database (host, port, ...) stay in, or a copy could not reach it.
	{"database-url", func(u string) string { return vocab.ShellQuote(redact.DatabaseURL(u)) }},
}

// absoluteQuoted is path, made absolute, quoted for a shell.
func absoluteQuoted(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return vocab.ShellQuote(path)
}

// setCarry settles the flags next steps carry (carried), from those fs
// was given.
func (a *app) setCarry(fs *pflag.FlagSet) {
	a.carryFrom(func(name string) (string, bool) {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			return fl.Value.String(), true
		}
		return "", false
	})
}

// setCarryPastFailure is setCarry for fs, whose parse of the command line
// stopped at a flag it could not take: the carried flags given after that
// one, which the parse never read, are read from the command line again,
// skipping what it cannot take. That read takes each of fs's flags as it
// takes a value or not, so that a value is never read as a flag.
func (a *app) setCarryPastFailure(fs *pflag.FlagSet) {
	again := pflag.NewFlagSet("carried", pflag.ContinueOnError)
	again.ParseErrorsWhitelist.UnknownFlags = true
	again.SetOutput(io.Discard)
	again.Usage = func() {}
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" || fl.NoOptDefVal != "" {
			again.BoolP(fl.Name, fl.Shorthand, false, "")
		} else {
			again.StringP(fl.Name, fl.Shorthand, "", "")
		}
	})
	_ = again.Parse(a.args) // what it read up to a failure serves
	a.carryFrom(func(name string) (string, bool) {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			return fl.Value.String(), true
		}
		if fl := again.Lookup(name); fl != nil && fl.Changed {
			return fl.Value.String(), true
		}
		return "", false
	})
}

// carryFrom settles the carried flags from given, which returns a flag's
// value when the command line gave it.
func (a *app) carryFrom(given func(name string) (string, bool)) {
	a.carry, a.carryURL = "", ""
	for _, f := range carriedFlags {
		if v, ok := given(f.name); ok {
			flag := " --" + f.name + " " + f.show(v)
			if f.name == "database-url" {
				a.carryURL = flag
			}
			a.carry += flag
		}
	}
}

// relayFlags are the global flags the commands a server relays to an
// operator carry (runner.MCPConfig.CommandFlags): the configuration file,
// data directory and database it runs with, however it was given them (an
// MCP client's configuration often sets them in the environment, which
// the operator's shell lacks), so that a command copied as relayed cannot
// reach another database. Paths are absolute, since the operator runs
// them elsewhere. The database is named without who connects
// (redact.DatabaseAddress): the operator runs the command as their own
// role, as a write a read-only server relays needs, and the agent is not
// told the server's. A setting from the configuration file comes with the
// file.
func (a *app) relayFlags() string {
	var out string
	for _, s := range []struct{ name, value string }{{"config", a.configPath}, {"data-dir", a.dataDir}, {"database-url", a.databaseURL}} {
		if s.value == "" || strings.HasPrefix(a.sources[s.name], "config ") {
			continue
		}
		if s.name == "database-url" {
			out += " --database-url " + vocab.ShellQuote(redact.DatabaseAddress(s.value))
			continue
		}
		if abs, err := filepath.Abs(s.value); err == nil {
			s.value = abs
		}
		out += " --" + s.name + " " + vocab.ShellQuote(s.value)
	}
	return out
}

// otherRole has next steps leave out the --database-url this command was
// given: they are for another role to run, with its own.
func (a *app) otherRole() {
	if a.carryURL != "" {
		a.carry = strings.Replace(a.carry, a.carryURL, "", 1)
		a.carryURL = ""
	}
}

// printNotes prints the notes of a result as the CLI words them, their
// asks by its flags, but the notes of asks of the kinds skip: what the
// output does not show, so that there is nothing to ask for.
func printNotes(w io.Writer, notes []string, asks []ops.Ask, skip ...ops.AskKind) {
	word := func(a ops.Ask, note string) string {
		if slices.Contains(skip, a.Kind) {
			return ""
		}
		return vocab.CommandNote(a, note)
	}
	for _, n := range ops.WordAsks(notes, asks, word) {
		fmt.Fprintln(w, "note: "+n)
	}
}

// printNext prints next steps, one "next:" line each.
func (a *app) printNext(w io.Writer, hints []ops.Hint) {
	for _, h := range hints {
		if h.Why != "" {
			fmt.Fprintf(w, "next: %s   # %s\n", a.command(h), h.Why)
		} else {
			fmt.Fprintf(w, "next: %s\n", a.command(h))
		}
	}
}

// outcomeError turns the ids a retry, discard or restore did not handle
// into the command's error: exit 1 when any failed or was refused (a
// restore's original of a corrected retry), 2 when any is ambiguous (give
// --queue) and none moved (1 when others did), else 3 when some were not
// found. When nothing moved and none failed, the result printed nothing,
// so the error names the next steps: the same call in each DLQ of an
// ambiguous id, the list of what is still dead.
func outcomeError(verb string, outcomes []ops.IDOutcome, next []ops.Hint) error {
	var failed, refused, ambiguous, missing, meanwhile []string
	first, moved := "", false
	for _, o := range outcomes {
		id := fmt.Sprint(o.ID)
		switch o.Outcome {
		case ops.OutcomeRetried, ops.OutcomeDiscarded, ops.OutcomeRestored:
			moved = true
			continue
		case ops.OutcomeFailed:
			failed = append(failed, id)
		case ops.OutcomeRefused:
			refused = append(refused, id)
		case ops.OutcomeAmbiguous:
			ambiguous = append(ambiguous, id)
		case ops.OutcomeNotFound:
			missing = append(missing, id)
		case ops.OutcomeAlreadyMoved:
			// Whether the other call retried or discarded it is not
			// known: not done by this call, as an id not found.
			meanwhile = append(meanwhile, id)
		default:
			continue
		}
		if first == "" {
			first = o.Error
		}
	}
	n := len(failed) + len(refused) + len(ambiguous) + len(missing) + len(meanwhile)
	if n == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of %d ids could not be %s", n, len(outcomes), verb)
	if len(outcomes) == 1 {
		msg = first
	} else {
		var parts []string
		for _, p := range []struct {
			what string
			ids  []string
		}{{"failed", failed}, {"refused", refused}, {"in several DLQs (pass --queue)", ambiguous}, {"not found", missing}, {"moved by another call meanwhile", meanwhile}} {
			if len(p.ids) > 0 {
				parts = append(parts, p.what+": "+strings.Join(p.ids, ", "))
			}
		}
		msg += " (" + strings.Join(parts, "; ") + "); first: " + first
	}
	e := &ops.Error{Msg: msg}
	switch {
	case !moved && len(failed) == 0:
		e.Hints = next // said as the error line's "see" commands, and as --json's next
	case len(failed) == 0:
		// The others moved: their next steps are the result's, printed
		// already; the list of what is still dead is the error's too,
		// for a script that reads only the error.
		e.Hints = slices.DeleteFunc(slices.Clone(next), func(h ops.Hint) bool { return h.Op != ops.OpDLQList })
	}
	switch {
	case len(failed)+len(refused) > 0:
		return e
	case len(ambiguous) > 0 && moved:
		// Exit 2 says nothing changed, and the other ids moved.
		return e
	case len(ambiguous) > 0:
		e.Err = ops.ErrInvalid // exit 2, of the kind dlq show's is
		return e
	}
	e.Err = ops.ErrNotFound // exit 3
	return e
}

// run opens the database as open does, runs one operation of the
// operations layer and prints its result: its JSON with --json (the same
// as the matching MCP tool's), else in words by render. status, when
// given, then turns the result into the command's exit status (ids not
// handled), however it was printed.
func run[Req, Res any](a *app, cmd *cobra.Command, op func(*ops.Service, context.Context, Req) (Res, error), req Req,
	render func(Res) error, status ...func(Res) error) error {
	if err := check(cmd, req); err != nil {
		return err
	}
	ctx, s, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := op(s.ops, ctx, req)
	if err != nil {
		return err
	}
	a.clock = s.ops.Now // the ages of what the database wrote count on its clock
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		ops.WordNotes(&res, vocab.CommandNote) // as the CLI takes them, by its flags, for its JSON
		err = printResult(a, res)
	} else {
		err = render(res)
	}
	var outcome error
	for _, st := range status {
		outcome = cmp.Or(outcome, st(res))
	}
	if out, ok := a.stdout.(*stdoutWriter); ok && err != nil && out.failed() != nil {
		return ranUnwritten{outcome} // done: only its output was cut
	}
	return cmp.Or(err, outcome)
}

// printResult prints res as JSON, its next steps as the command lines
// that take them (commandHint); res itself is left as it is, for what the
// command says after it.
func printResult[Res any](a *app, res Res) error {
	ops.RewriteHints(reflect.ValueOf(&res), a.commandHint)
	return printJSON(a.stdout, res)
}

// commandHint is a next step as the command line that takes it, in the
// shape the MCP tools give a step no tool takes (op "cli", args.command),
// so that --json names what to run, with the global flags this command
// was given, as its lines do.
func (a *app) commandHint(h ops.Hint) ops.Hint {
	return ops.Hint{Op: "cli", Args: map[string]any{"command": a.command(h)}, Why: h.Why}
}

// check runs a request's own check (the operations layer's), when it has
// one, before anything is opened: a bad request fails at once, in the same
// words as from the operation, with a field that cmd sets by a flag named
// as the flag.
func check(cmd *cobra.Command, req any) error {
	c, ok := req.(interface{ Check() error })
	if !ok {
		return nil
	}
	return flagNamed(cmd, c.Check())
}

// flagWords names the request field an operation's error starts with,
// one of fields, as the flag that sets it (--error-class for error_class).
func flagWords(err error, fields ...string) error {
	return ops.NameField(err, func(f string) string { return "--" + flagName(f) }, fields...)
}

func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// jsonFlag adds --json to cmd, the command of operation op, which makes
// run print the result as JSON, and returns cmd. The flag's help names the
// MCP tool whose JSON it is, when the MCP server has one for op.
func jsonFlag(cmd *cobra.Command, op string) *cobra.Command {
	usage := "print the result as JSON (no MCP tool does this)"
	if tool := "pgbus_" + op; slices.Contains(tools.Names(), tool) {
		usage = "print the result as JSON, the same as the MCP tool " + tool + "'s"
	}
	cmd.Flags().Bool("json", false, usage)
	return cmd
}

// pageFlags adds --cursor and --limit of a paged list.
func pageFlags(f *pflag.FlagSet, cursor *string, limit *int) {
	f.StringVar(cursor, "cursor", "", "continue after the previous page (its \"more:\" line or next_cursor)")
	f.IntVar(limit, "limit", ops.DefaultPageSize, fmt.Sprintf("per page, 1 to %d", ops.MaxPageSize))
}

// checkLimit checks the --limit of list op before the database is
// opened.
func checkLimit(op string, limit int) error {
	if err := ops.CheckLimit(op, limit); err != nil {
		return usageError{flagWords(err, "limit")}
	}
	return nil
}
