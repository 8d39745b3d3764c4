// Package cli is the pgbus command line: it parses subcommands, flags and
// arguments into requests of the packages below (ops for operations,
// dbopen for the database, config and runner for workers and the MCP
// server, demo, bench) and renders their results as tables, words, JSON
// and progress bars, with the exit codes scripts rely on.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/demo"
	"github.com/pgbus/pgbus/internal/hiddenchar"
	"github.com/pgbus/pgbus/ops"
)

// Exit codes, part of the CLI's contract with scripts.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitUsage    = 2
	ExitNotFound = 3
)

// usageError marks errors in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs the command line and returns the process exit code.
//
// SIGINT, SIGTERM and SIGHUP cancel the command's context, so that it stops
// cleanly, the embedded PostgreSQL it started included. So does a failed
// write to stdout, such as a reader that went away (pgbus demo | head):
// SIGPIPE is received here rather than left to kill the process, so the
// write returns EPIPE instead.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopSignals := cancelOnSignals(cancel)
	defer stopSignals()
	out := &stdoutWriter{w: stdout, cancel: cancel}
	app := &app{stdin: stdin, stdout: out, stderr: stderr, args: args}
	root := app.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(out)
	root.SetErr(stderr)
	// A command's own flag before its name is refused whether or not
	// cobra could have found the command past it (it takes the next word
	// for the value of a flag it does not know): one way to write each
	// command line.
	cmd, err := misplacedFlag(root, args)
	if err != nil {
		app.flagsFailed = true
	} else {
		cmd, err = root.ExecuteContextC(ctx)
	}
	out.flush()
	app.trace.flush()
	err = app.explain(app.cobraWords(cmd, flagNamed(cmd, err)))
	if werr := out.failed(); werr != nil {
		var report bool
		if err, report = outputFailed(cmd, err, werr, out.raw()); !report {
			if err == nil {
				return ExitFailure // its output was cut
			}
			return exitCode(err) // its outcome's: not found, say
		}
	}
	if err == nil {
		return ExitOK
	}
	cause := err // its kind, and how much was done, before a stop rewords it
	if stoppedBy(ctx, err) {
		if longRunning(cmd) {
			return ExitOK // stopped while starting: a stop like any other
		}
		err = app.stoppedBySignal(cmd, err)
	} else if p := (*ops.PartlyDone)(nil); errors.As(err, &p) {
		err = app.partlyDone(p, err)
	}
	// Errors quote what they could not use, such as a DATABASE_URL or a
	// configuration file's URL, passwords and all.
	self := bareCommand(cmd)
	line, _ := ops.RedactText(app.errorLine(err, self))
	code := exitCode(err)
	if log := app.stopLog(cmd, args, stderr); log != nil {
		// The line a crash-looping process's log shipper must read: a
		// record of the log it asked for JSON, not text among them.
		// Its message a phrase a log query matches, the error's words under
		// err, as every other line gives its error.
		log.Error(stopMessage, "err", line, "kind", errorKind(cause, code), "exit_code", code, "next", app.nextCommands(cause, self))
		return code
	}
	app.printError(stderr, errorsAsJSON(cmd, args, app.flagsFailed), line, code, cause, self)
	return code
}

// stopMessage is the message of the record a long-running command (pgbus
// work, serve, dashboard) that logs JSON stops on: the same words
// whatever the error, which the record's err, kind, exit_code and next
// give.
const stopMessage = "pgbus: stopped on an error"

// stopLog is the log the error of cmd, a command that runs until stopped,
// is written to as a record, when its logs are JSON; nil otherwise. An
// error met before the log was made (a configuration file, a flag, a
// secret's file refused at start) goes to a JSON log of its own when the
// command line or else the environment asked for JSON logs: it was the one
// line of text among them.
func (a *app) stopLog(cmd *cobra.Command, args []string, stderr io.Writer) *slog.Logger {
	switch {
	case !longRunning(cmd):
		return nil
	case a.log != nil:
		if a.logFormat == "json" {
			return a.log
		}
		return nil
	case logsAsJSON(args):
		return slog.New(ops.RedactingHandler(jsonLogHandler(stderr, nil)))
	}
	return nil
}

// logsAsJSON reports whether args, or else the environment, ask for JSON
// logs (--log-format json, PGBUS_LOG_FORMAT=json).
func logsAsJSON(args []string) bool {
	for i, arg := range args {
		switch {
		case arg == "--":
			return os.Getenv(EnvLogFormat) == "json"
		case strings.HasPrefix(arg, "--log-format="):
			return strings.TrimPrefix(arg, "--log-format=") == "json"
		case arg == "--log-format" && i+1 < len(args):
			return args[i+1] == "json"
		}
	}
	return os.Getenv(EnvLogFormat) == "json"
}

// stoppedBySignal is the error of a command cmd a signal stopped: what was
// done before is kept, and a bulk retry, discard or purge says how much it
// was (an ops.PartlyDone), so that nobody takes it for a command that did
// nothing. The demo says its own words: run again, it starts over rather
// than finish.
func (a *app) stoppedBySignal(cmd *cobra.Command, err error) error {
	if s := (sendStopped{}); errors.As(err, &s) {
		return errors.New("stopped by a signal; " + s.msg)
	}
	if p := (*ops.PartlyDone)(nil); errors.As(err, &p) {
		stopped := "stopped by a signal " + strings.TrimPrefix(p.Stopped(), "stopped ")
		if p.Again.Op == "" {
			return errors.New(stopped)
		}
		// No next step follows a stop: the command that does the rest
		// is said here, with the limit left.
		return fmt.Errorf("%s; run %s: it %s", stopped, a.command(p.Again), p.Rest())
	}
	if topLevel(cmd) && cmd.Name() == "demo" {
		return errors.New(demo.Stopped)
	}
	if steps := nextSteps(err); len(steps) > 0 {
		// A write cut off: the commands that show what it did.
		return fmt.Errorf("stopped by a signal before finishing; what was done before is kept: see %s, then run the command again to finish", a.commands(steps, " or "))
	}
	return errors.New("stopped by a signal before finishing; what was done before is kept: run the command again to finish")
}

// partlyDone is err, that of a bulk retry, discard or purge cut off by
// something other than a signal (the database gone), in this command
// line's words: how much it did, which stays done, and to run the same
// command again, once the database answers when the operations layer's
// next steps begin with the health check.
func (a *app) partlyDone(p *ops.PartlyDone, err error) error {
	if p.Again.Op == "" {
		return reworded{fmt.Sprintf("%v; %s", p.Err, p.Stopped()), err}
	}
	again := runAgain(p)
	if steps := ops.NextSteps(p); len(steps) > 0 && steps[0].Op == ops.OpHealth {
		again += " once it answers (" + a.command(steps[0]) + " says when)"
	}
	return reworded{fmt.Sprintf("%v; %s; %s: it %s", p.Err, p.Stopped(), again, p.Rest()), err}
}

// runAgain says to run the command of a call that stopped partway again,
// with the limit that is left: with its own, the two would do more than
// the limit asked for.
func runAgain(p *ops.PartlyDone) string {
	var with []string
	if left := p.Left(); left > 0 {
		with = append(with, fmt.Sprintf("--limit %d", left))
	}
	if p.Until != "" {
		// The rest of the same messages, not those that died since.
		with = append(with, "--until "+p.Until)
	}
	if len(with) > 0 {
		return "run the same command again with " + strings.Join(with, " ")
	}
	return "run the same command again"
}

// bareCommand is the command line of cmd, such as "pgbus health", when it
// ran with no argument and no flag of its own but --json (the global ones
// aside): the line that a next step naming it alone would only repeat.
// Otherwise "": pgbus queues emails may well be told to see pgbus queues.
func bareCommand(cmd *cobra.Command) string {
	if cmd == nil || len(cmd.Flags().Args()) > 0 {
		return ""
	}
	bare := true
	cmd.LocalNonPersistentFlags().Visit(func(f *pflag.Flag) { bare = bare && f.Name == "json" })
	if !bare {
		return ""
	}
	return cmd.CommandPath()
}

// stoppedBy reports whether err, a command's, is the end a signal gave
// it (ctx's cause errStopped): an error of the cancellation itself, or a
// database call cut by it, which can come back as a connection closed
// rather than as the cancellation, and is then no database down.
func stoppedBy(ctx context.Context, err error) bool {
	if !errors.Is(context.Cause(ctx), errStopped) {
		return false
	}
	return errors.Is(err, context.Canceled) || ops.ErrorKind(err) == ops.KindUnavailable
}

// errStopped is the cause of a context cancelled by SIGINT, SIGTERM or
// SIGHUP.
var errStopped = fmt.Errorf("stopped by a signal: %w", context.Canceled)

// longRunning reports whether cmd runs until stopped (pgbus work, serve
// and dashboard), so that a stop while it starts is no failure.
func longRunning(cmd *cobra.Command) bool {
	if !topLevel(cmd) {
		return false
	}
	switch cmd.Name() {
	case "work", "serve", "dashboard":
		return true
	}
	return false
}

// topLevel reports whether cmd is a command of pgbus itself (such as
// pgbus demo) rather than the root or a subcommand of one.
func topLevel(cmd *cobra.Command) bool {
	return cmd != nil && cmd.Parent() != nil && !cmd.Parent().HasParent()
}

// cancelOnSignals cancels ctx on SIGINT, SIGTERM or SIGHUP, and receives
// SIGPIPE so that it does not kill the process; the function returned stops
// both.
func cancelOnSignals(cancel context.CancelCauseFunc) func() {
	stops := make(chan os.Signal, 1)
	signal.Notify(stops, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-stops:
				cancel(errStopped)
			case <-pipes:
				// A write to a closed pipe or socket: the write itself
				// returns EPIPE, and stdoutWriter acts on it for stdout.
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(stops)
		signal.Stop(pipes)
		close(done)
	}
}

// stdoutWriter is the command's stdout: the first write that fails cancels
// the command, since nobody is reading what it prints. What it writes is
// terminalSafe.
type stdoutWriter struct {
	w      io.Writer
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	err    error
	rawErr error  // err as the writer returned it
	held   []byte // the start of a character the next write ends
}

func (s *stdoutWriter) Write(p []byte) (int, error) { return s.write(p, true) }

// writeOn writes p as Write does, but a failed write does not cancel the
// command: a write going on in several transactions (send --ndjson)
// prints as each commits, and goes on to its end once nobody reads it, as
// a write that prints when it ends does. The command's end says that its
// output is not all written all the same.
func (s *stdoutWriter) writeOn(p []byte) error {
	_, err := s.write(p, false)
	return err
}

func (s *stdoutWriter) write(p []byte, cancel bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := append(s.held, p...)
	cut := len(buf) - partialTail(buf)
	s.held = append([]byte(nil), buf[cut:]...)
	if _, err := s.w.Write(terminalSafe(buf[:cut])); err != nil {
		if s.err == nil {
			s.rawErr = err
			s.err = fmt.Errorf("cannot write to stdout: %w", err)
			if cancel {
				s.cancel(s.err)
			}
		}
		return 0, err
	}
	return len(p), nil
}

// flush writes the bytes held back by the last write.
func (s *stdoutWriter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) > 0 {
		_, _ = s.w.Write(s.held)
		s.held = nil
	}
}

// partialTail returns how many bytes at the end of p start a UTF-8
// character that p does not finish: a write may split one, and a control
// character split so would pass unescaped.
func partialTail(p []byte) int {
	for n := 1; n <= utf8.UTFMax-1 && n <= len(p); n++ {
		if b := p[len(p)-n]; utf8.RuneStart(b) {
			if b >= 0xC0 && !utf8.FullRune(p[len(p)-n:]) {
				return n
			}
			return 0
		}
	}
	return 0
}

// terminalSafe is p with every control character but tab and line feed
// written as its \uXXXX escape: an escape sequence's ESC, a carriage
// return that would overwrite a line, DEL and the C1 controls (U+009B
// starts an escape sequence too), and the bidirectional controls that
// reorder what a terminal shows (U+202E, the right-to-left override, can
// make a table's row read otherwise than it is), and the invisible ones
// (U+200B, the zero-width space; the tag characters, U+E0041 written as
// its surrogate pair \udb40\udc41: hiddenchar). Text from the database,
// a job's kind or an error message another client wrote, then cannot
// drive or disguise the terminal it is printed on; within a JSON string
// the escape means the same character, so --json output keeps its data
// exactly. A byte that is not UTF-8 is left as it is unless it is a C1
// control on its own (0x9b is an escape sequence's start on an 8-bit
// terminal), written \xNN: JSON output never holds one, so that escape
// cannot change what a JSON string means.
func terminalSafe(p []byte) []byte {
	var out []byte
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 && p[i] >= 0x80 && p[i] <= 0x9f {
			r = -1
		}
		if r != -1 && !unsafeOnTerminal(r, size) {
			if out != nil {
				out = append(out, p[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(p)+16), p[:i]...)
		}
		if r == -1 {
			out = fmt.Appendf(out, `\x%02x`, p[i])
		} else {
			out = hiddenchar.AppendEscape(out, r)
		}
		i += size
	}
	if out == nil {
		return p
	}
	return out
}

// unsafeOnTerminal tells whether the character r, size bytes of UTF-8,
// is one terminalSafe escapes; a byte that is not UTF-8 is another's.
func unsafeOnTerminal(r rune, size int) bool {
	return !(r == utf8.RuneError && size == 1) && hiddenchar.Is(r)
}

func (s *stdoutWriter) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// raw is the error of the failed write as the writer returned it.
func (s *stdoutWriter) raw() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rawErr
}

func exitCode(err error) int {
	var usage usageError
	switch {
	case errors.As(err, new(sendStopped)): // some lines were sent, whatever stopped the rest
		return ExitFailure
	case errors.As(err, &usage), errors.Is(err, ops.ErrInvalid), errors.Is(err, ops.ErrReadOnly), isCobraUsage(err),
		errors.Is(err, dbopen.ErrBadURL): // malformed input; an unreachable server is a failure

		return ExitUsage
	case errors.Is(err, ops.ErrNotFound):
		return ExitNotFound
	default:
		return ExitFailure
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pgbus",
		Short: "Dead-letter and retry engine on PostgreSQL, with an MCP server for AI agents",
		Long: `pgbus runs background jobs from PostgreSQL queues (PGMQ layout), retries
failures with backoff, keeps what cannot succeed in dead-letter queues with
the reason it died, and lets people (this CLI) and AI agents (pgbus serve)
inspect and repair them.

Without --database-url or DATABASE_URL, pgbus starts an embedded PostgreSQL
from the server binaries installed on this machine.

Settings come from flags, then environment variables (DATABASE_URL, PGBUS_*),
then the configuration file (--config or PGBUS_CONFIG; see pgbus help config),
then defaults. Exit codes: 0 success, 1 failure, 2 usage error (nothing was
changed), 3 not found. With --json, a command that fails prints its error on
stderr as one JSON line, {"error", "kind", "exit_code", "next"}: the error line
in the same words, a stable word for its kind (usage, invalid, read_only,
not_found, changed, unavailable, stopped, schema, permission, failed), the
exit code, and the next steps as commands.

Quick start: pgbus demo`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// cobra's suggestions take lines of their own; cobraWords puts
		// them in the error's one line.
		DisableSuggestions: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if printsOnly(cmd) {
				return nil
			}
			return a.setup(cmd)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		a.flagsFailed = true
		if args := cmd.Flags().Args(); cmd.HasSubCommands() && len(args) > 0 {
			// pgbus dlq bogus --json: the flag is a subcommand's, and
			// the mistake is the subcommand's name.
			a.setCarryPastFailure(cmd.Flags()) // setup did not run
			return a.unknownSubcommand(cmd, args[0])
		}
		if idErr := negativeIDError(cmd, err); idErr != nil {
			return idErr
		}
		return usageError{unreadableValue(err)}
	})
	a.addGlobalFlags(root)
	root.AddCommand(a.migrateCommand(), a.workCommand(), a.demoCommand())
	root.AddCommand(a.queuesCommand(), a.queueCommand(), a.sendCommand())
	root.AddCommand(a.dlqCommand(), a.auditCommand())
	root.AddCommand(a.healthCommand(), a.workersCommand(), a.circuitsCommand(), a.circuitCommand())
	root.AddCommand(configHelpTopic())
	root.AddCommand(a.serveCommand())
	root.AddCommand(a.dashboardCommand())
	root.AddCommand(a.benchCommand())
	root.AddCommand(versionCommand())
	root.SetHelpCommand(helpCommand())
	a.completionCommand(root)
	onceFlags(root)
	root.Version = buildinfo.Describe()
	root.SetVersionTemplate("{{.Version}}\n")
	return root
}

// unreadableValue is err, pflag's about a flag's value it could not read,
// in words of what to give instead ("not a duration: give a number with a
// unit") rather than the parser's ("time: missing unit in duration"),
// and a flag given twice in the words of its refusal alone; other errors
// pass unchanged.
func unreadableValue(err error) error {
	var twice givenTwice
	if errors.As(err, &twice) {
		return twice.error // says the flag and both values itself
	}
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) || bad.GetFlag() == nil {
		return err
	}
	fl := bad.GetFlag()
	switch fl.Value.Type() {
	case "bool", "duration", "int":
	default:
		return err
	}
	what := strings.TrimSuffix(badValue(fl, bad.Unwrap()), " (or leave it unset)")
	return fmt.Errorf("--%s %q: %s", fl.Name, bad.GetValue(), what)
}

// completionCommand adds cobra's pgbus completion now rather than when the
// command line runs, so that it refuses a shell it does not know as every
// other group does a subcommand (cobra's prints its usage and exits 0).
func (a *app) completionCommand(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			a.groupCommand(c)
		}
	}
}

// helpCommand is pgbus help: cobra's own prints the usage and exits 0 for
// a topic it does not know, where a mistyped command line is a usage
// error (exit 2).
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help for any command or topic: pgbus help dlq retry, pgbus help config.",
		RunE: func(c *cobra.Command, args []string) error {
			return helpOn(c.Root(), args)
		},
	}
}

// helpOn prints the help of the command or topic path names below root:
// what pgbus help dlq and pgbus dlq help both print.
func helpOn(root *cobra.Command, path []string) error {
	cmd, rest, err := root.Find(path)
	if err != nil || len(rest) > 0 {
		return usageError{fmt.Errorf("there is no help topic %q; see pgbus help for the commands and topics", strings.Join(path, " "))}
	}
	cmd.InitDefaultHelpFlag()
	return cmd.Help()
}

// printsOnly reports whether cmd only prints text of its own, whatever the
// settings say: pgbus help (pgbus help config among them) and the shell
// completion scripts. They skip the settings, so that a configuration file
// or an environment variable that stops every other command does not stop
// the help that says how to write it.
func printsOnly(cmd *cobra.Command) bool {
	for c := cmd; c != nil && c.HasParent(); c = c.Parent() {
		if !c.Parent().HasParent() {
			return c.Name() == "help" || c.Name() == "completion"
		}
	}
	return false
}

// isCobraUsage recognises the errors cobra returns for a mistyped command
// line, which it does not give a type of their own.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires ", "invalid argument"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// misplacedFlag is the error of a command line that gives a command's own
// flag before the command's name (pgbus --json dlq list), with the command
// meant: cobra takes the word after an unknown flag for its value and
// answers that "list" is an unknown command, which sends the person
// looking for a command that exists. nil when the command line has no
// such flag.
func misplacedFlag(root *cobra.Command, args []string) (*cobra.Command, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			return nil, nil
		}
		name, _, withValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := root.PersistentFlags().Lookup(name)
		if fl == nil && len(name) == 1 {
			fl = root.PersistentFlags().ShorthandLookup(name)
		}
		if fl != nil || name == "help" || name == "h" || name == "version" || name == "v" {
			if fl != nil && !withValue && fl.NoOptDefVal == "" {
				i++ // its value
			}
			continue
		}
		global := "before it go only " + globalFlags(root)
		flag, _, _ := strings.Cut(a, "=")
		if cmd := commandOfFlag(root, args, i, name); cmd != nil {
			return cmd, usageError{fmt.Errorf("%s is a flag of %s: give it after the command's name (%s %s); %s", flag, cmd.CommandPath(), cmd.CommandPath(), flag, global)}
		}
		return nil, usageError{fmt.Errorf("unknown flag %s before the command's name: give a command's own flags after its name (pgbus dlq list --json); %s", flag, global)}
	}
	return nil, nil
}

// commandOfFlag is the command args name once their i-th word, the flag
// name, is left out, with the value after it when the flag takes one: nil
// when they name none, or one without that flag.
func commandOfFlag(root *cobra.Command, args []string, i int, name string) *cobra.Command {
	for _, skip := range []int{1, 2} {
		if i+skip > len(args) {
			break
		}
		rest := append(append([]string{}, args[:i]...), args[i+skip:]...)
		cmd, _, err := root.Find(rest)
		if err == nil && cmd != root && cmd.Flags().Lookup(name) != nil {
			return cmd
		}
	}
	return nil
}

// globalFlags names the flags every command takes, such as "--config,
// --database-url, --data-dir, --log-format and --log-level".
func globalFlags(root *cobra.Command) string {
	var names []string
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { names = append(names, "--"+f.Name) })
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
