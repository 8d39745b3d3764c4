package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"

	"github.com/pgbus/pgbus/engine"
)

// TypeExec is the handler type that runs a command for each job.
const TypeExec = "exec"

// Error classes of the exec handler besides "exec.exit_<code>" (for example
// "exec.exit_3"), as the failure history and the DLQ show them.
const (
	// ClassExecTimeout: the command ran past its timeout and its process
	// group was sent SIGKILL, with no SIGTERM first. Retryable.
	ClassExecTimeout = "exec.timeout"
	// ClassExecStart: the command could not be started. Retryable when
	// something it needs is missing (its program, the interpreter its #!
	// line names, its dir), which a deploy may be replacing; not when the
	// system cannot execute its program (no #! line nor a binary for this
	// system, or permission denied): those dead-letter the message at once.
	ClassExecStart = "exec.start"
)

// ExitTempFail is EX_TEMPFAIL from sysexits.h, the default retryable exit
// code.
const ExitTempFail = 75

// Environment variables that tell an exec handler's command about its job.
// It also gets the worker's environment, without what is the worker's own
// (its PGBUS_ variables, its database settings, its trace context; see
// WithheldEnv), and the env option.
const (
	EnvQueue          = "PGBUS_QUEUE"
	EnvMsgID          = "PGBUS_MSG_ID"
	EnvKind           = "PGBUS_KIND"
	EnvAttempt        = "PGBUS_ATTEMPT"
	EnvIdempotencyKey = "PGBUS_IDEMPOTENCY_KEY"
	// EnvTraceparent and EnvTracestate are the attempt's W3C trace
	// context, when it has one (tracing is on), under the names
	// OpenTelemetry's environment carriers read: the command's spans join
	// the message's trace under the attempt, as the http handler's
	// downstream does with the same values in its headers.
	EnvTraceparent = "TRACEPARENT"
	EnvTracestate  = "TRACESTATE"
)

// WithheldEnv returns the variables of the worker's environment, besides
// those starting with PGBUS_, that its commands do not inherit; the env
// option may set them, and its value is passed.
//
// They are DATABASE_URL and every variable libpq reads (pgx, which the
// worker connects with, reads the same ones and PGSSLPASSWORD): the
// worker's database settings. A command, which may be a third party's
// script, must not get the worker's database login unasked, and no subset
// of them is safe to leave: without PGPASSWORD, PGHOST and PGUSER with a
// client key (PGSSLKEY), a service or password file (PGSERVICE,
// PGPASSFILE) or a server that trusts the host would still let a bare psql
// in the command log in as the worker; and the rest (PGTZ, PGOPTIONS, ...)
// only shape that connection. Variables named PG... that libpq does not
// read, such as PGDATA or PGID, pass.
//
// TRACEPARENT and TRACESTATE are the trace context of whatever started the
// worker, not the job's; the command gets the attempt's instead, when it
// has one.
func WithheldEnv() []string { return slices.Clone(withheldEnv) }

var withheldEnv = []string{
	"DATABASE_URL", "DATABASE_URL_FILE",
	"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE",
	"PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGREQUIREAUTH", "PGCHANNELBINDING",
	"PGSSLMODE", "PGREQUIRESSL", "PGSSLNEGOTIATION", "PGSSLCOMPRESSION", "PGSSLCERT", "PGSSLKEY",
	"PGSSLPASSWORD", "PGSSLCERTMODE", "PGSSLROOTCERT", "PGSSLCRL", "PGSSLCRLDIR", "PGSSLSNI",
	"PGREQUIREPEER", "PGSSLMINPROTOCOLVERSION", "PGSSLMAXPROTOCOLVERSION",
	"PGMINPROTOCOLVERSION", "PGMAXPROTOCOLVERSION", "PGGSSENCMODE", "PGKRBSRVNAME", "PGGSSLIB",
	"PGGSSDELEGATION", "PGCONNECT_TIMEOUT", "PGCLIENTENCODING", "PGTARGETSESSIONATTRS",
	"PGLOADBALANCEHOSTS", "PGOPTIONS", "PGAPPNAME", "PGDATESTYLE", "PGTZ", "PGGEQO", "PGLOCALEDIR",
	EnvTraceparent, EnvTracestate,
}

// withheld is withheldEnv as a set.
var withheld = func() map[string]bool {
	m := make(map[string]bool, len(withheldEnv))
	for _, name := range withheldEnv {
		m[name] = true
	}
	return m
}()

// How much of a command's output a failure message quotes.
const (
	outputLines = 10
	outputBytes = 700
	// tailKeep is how much of the end of an output longer than MaxCapture
	// is kept, for its last lines.
	tailKeep = 4 << 10
	// waitDelay bounds the wait for the output pipes and stdin after the
	// command exited or was killed, should something it started hold
	// them; what is left of its group is killed then.
	waitDelay = time.Second
)

// ExecOptions are the options of an exec handler block:
//
//	handler:
//	  type: exec
//	  command: [/usr/local/bin/charge, --live]   # required: argv, not a shell line
//	  timeout: 1m                                # one attempt, default 30s
//	  dir: /srv/billing
//	  env: {BILLING_MODE: live, BILLING_TOKEN: "${BILLING_TOKEN}"}
//	  retry_exit_codes: [75]                     # default [75] (EX_TEMPFAIL)
//	  discard_exit_codes: [3]                    # default none
//	  retry_unknown_exit_codes: false
//	  retry_signals: true                        # default true
//	  on_exit: {76: {action: retry, max_retries: 20, backoff: 1m}}
//	  breaker: {failure_threshold: 5, cool_off: 10s, max_cool_off: 5m}
//
// The command runs in a process group of its own with the job's payload
// on stdin and PGBUS_QUEUE, PGBUS_MSG_ID, PGBUS_KIND, PGBUS_ATTEMPT and
// PGBUS_IDEMPOTENCY_KEY in its environment, with TRACEPARENT and
// TRACESTATE, the attempt's trace context, when tracing is on. The rest of
// its environment is the worker's and the env option's; the worker's
// database settings (DATABASE_URL, PGPASSWORD, PGPASSFILE and the other
// libpq variables; WithheldEnv lists them) are left out unless env sets
// them. A program the system cannot execute (a script without a #! line,
// a file without execute permission) dead-letters the message at once
// (exec.start), as no retry can start it; a missing one (a deploy may be
// replacing it) is retried. Exit code 0 is success; a
// retry exit code is a retryable failure, a discard exit code archives the
// message without dead-lettering it, and any other code is non-retryable
// (unless retry_unknown_exit_codes). A command killed by signal N counts as
// exit code 128+N, as in a shell, and is retried under the queue's retry
// policy (retry_signals), as is one that exits with a code in 129..192, as
// a shell reports a child a signal killed (sh -c 'prog; ...'): the program
// did not choose to fail, the kernel's OOM killer (signal 9), an operator
// or a supervisor (SIGTERM) stopped it, or it crashed, which the next
// attempt may not. The exit code lists and on_exit decide for the codes
// they name (on_exit: {137: dead_letter}), and retry_signals: false leaves
// the others to the rules above. At the timeout the whole process group
// is sent SIGKILL, with no SIGTERM first to clean up on, and the failure
// (exec.timeout) is retryable; at a stopping worker's drain timeout too,
// and the job is given back. A command that must clean up bounds its own
// work below the timeout. A command that
// exited before either counts by its exit code, even while what it
// started in a session of its own still holds its output. When it exits,
// whatever its exit code, what it started and left in its group is
// sent SIGKILL at once. A program that must outlive its job must have left
// the group, in a session of its own, before the command exits:
// setsid -w sh -c 'prog >/dev/null 2>&1 </dev/null &' returns only once
// prog runs in the new session. A bare setsid prog &, or setsid -f prog,
// returns before the child called setsid, and the child is killed with
// the group when the command exits first; a supervisor (systemd-run)
// that starts the program is another way. The
// first 64 KB of stdout and of stderr are kept (the rest is read and
// dropped), and the last lines of stderr (or of stdout, when stderr is
// empty) go into the failure message, a very long line by its start so
// that it leaves room for the lines before it. The values of env are secrets but
// those of the system's variables (PATH, HOME, LANG, ...) and of names
// that say they hold a place or a setting (_DIR, _HOST, _MODE, ...):
// each occurrence of one (of MinSentSecret characters or more) in what
// the command writes, as given or encoded (JSON-escaped, percent-encoded,
// in HTML or base64), is hidden before the failure is stored or logged. So are the values of command's options named like a secret's
// key (--token VALUE, --api-key=VALUE, -password VALUE; not -p, which
// many programs take for a port), what of an argument that is a URL the
// http handler's url hides (its password, query values and token-shaped
// path segments), the value of a header argument (-H 'X-Api-Key: ...';
// not after grep's -H, which names files) and of an assignment where a
// command starts (API_TOKEN=... deliver, env API_TOKEN=..., export
// API_TOKEN=...), whose name says whether it is a secret as env's does;
// in a shell command within an argument too (sh -c "...", ssh's remote
// command). Another argument holding blanks is most often a message
// ("msg=Deployment done"), whose plain words stay shown: an assignment
// in it is hidden only when its name looks like a secret's key or its
// value like a token. ${NAME} in a value of env, and in dir, is replaced
// by the environment variable NAME when the handler is built (Build), as
// in the http handler's headers: a variable that is not set fails Build,
// Check does not need it, and its value is a secret whatever the name in
// env (not in dir, a place). command is not expanded so: a shell it runs
// expands $NAME itself, from the command's environment, and the
// arguments of a command a file already has must reach it as they are.
//
// The help tag of each field is its documentation, shown by pgbus help
// config.
type ExecOptions struct {
	Command               []string          `yaml:"command" help:"required: the program and its arguments, such as [/usr/local/bin/charge, --live]; not run through a shell. The program is an absolute path or a name found on PATH. ${NAME} in it is passed as written, not replaced: give a secret in env, where a shell ([/bin/sh, -c, ...]) finds $NAME itself. The value of an option named like a secret's key (--token VALUE, --api-key=VALUE, --password, --secret, --auth...; not -p, which many programs take for a port; an argument after it that starts with - is the next option) is a secret, hidden as env's values are where the command prints it, and so is what of an argument that is a URL the http handler's url hides: its password, query values and token-shaped path segments. A header (Name: value) after -H or --header, or given to --header=, has its value hidden as the http handler's headers do (all but Content-Type, Accept and the other plain ones; a Bearer credential also without its scheme), and so has any argument of that form named like a secret's key (Authorization: ..., Cookie: ..., X-Api-Key: ...); the -H of grep, egrep, fgrep, zgrep, rg and ack, right after the program or its options, names files and gives no header. An assignment NAME=VALUE where a command starts (API_TOKEN=... ./deliver), after env or sudo and their options (env API_TOKEN=... ./deliver) or after export, readonly, declare, typeset or local has its value hidden as env's values are (not LOG_LEVEL and the other plain names env's help lists). An argument a program runs as a shell command is read as one ([/bin/sh, -c, \"curl -H 'Authorization: Bearer ...' --token ... https://...\"]): its words, split at blanks and unquoted ; & | ( ) < > with quotes and backslashes removed and nothing expanded, are arguments to the same rules, and a word after ; & | ( ) or a line break starts a command. Such an argument is any after the -c of sh, bash, dash, zsh, ksh, ksh93, mksh, pdksh, oksh, lksh, ash, yash, posh, csh, tcsh or fish (alone or in a cluster such as -ec), after the -c or --command of su, runuser, flock or script, the -s or -i of sudo or the -S of env, and any of ssh, autossh, watch, eval, parallel or tmux. Any other argument holding blanks is read so too, but as it is most often a message (--message \"msg=Deployment done\"), an assignment in it is hidden only when its name looks like a secret's key (API_TOKEN=...) or its value like a token (a run of 8 letters and digits or more mixing both), not a plain word. A value shorter than 8 characters is not hidden so"`
	Dir                   string            `yaml:"dir" help:"the working directory (default: the worker's). ${NAME} in it is the worker's environment variable NAME, as in env (dir: \"${APP_HOME}/jobs\"; pgbus work and pgbus serve refuse to start while it is not set), though a place and not hidden as a secret; ~ is not expanded"`
	Env                   map[string]string `yaml:"env" help:"variables added to the worker's environment; names starting with PGBUS_ are reserved. ${NAME} in a value is the worker's environment variable NAME, as in the http handler's headers ($${NAME} for a literal ${NAME}, and $${ for a literal ${, as a ${ without its closing } is refused; pgbus work and pgbus serve refuse to start while it is not set; its value is a secret whatever the name). The command does not inherit the worker's DATABASE_URL, DATABASE_URL_FILE, PGPASSWORD, PGPASSFILE nor its other libpq variables (PGHOST, PGUSER, PGSERVICE, PGSSLKEY, ...), so that it does not get the worker's database login: set them here for a command that needs a database. Values are secrets, stored, logged and shown as [REDACTED] where the command prints them (stderr, stdout), but those of PATH, HOME, LANG, LANGUAGE, LC_*, TZ, TERM, TMPDIR, TEMP, TMP, USER, LOGNAME, SHELL and PWD, and of names ending in _DIR, _PATH, _HOME, _FILE, _MODE, _ENV, _LEVEL, _HOST, _PORT, _REGION or _TIMEOUT unless the name looks like a secret's (SESSION_DIR): places and settings an error must be able to name. So are the values it inherits from the worker under a secret's name (PAGER_TOKEN, AWS_SECRET_ACCESS_KEY, names ending in _KEY, _PW, _PASS, _DSN or _SALT, or holding HMAC). A value shorter than 8 characters is not hidden so, as it would hide common words too"`
	RetryExitCodes        []int             `yaml:"retry_exit_codes" help:"exit codes that are retried (default [75], EX_TEMPFAIL)"`
	DiscardExitCodes      []int             `yaml:"discard_exit_codes" help:"exit codes that archive the message with the failure recorded instead of dead-lettering it"`
	RetryUnknownExitCodes bool              `yaml:"retry_unknown_exit_codes" help:"true: every other nonzero exit code is retried instead of dead-lettered"`
	RetrySignals          bool              `yaml:"retry_signals" help:"true (the default): a command killed by a signal (exit code 128+N for signal N), or that exits with a code in 129..192 as a shell does when a signal killed its child, is retried under the queue's retry policy instead of dead-lettered, as the OOM killer (signal 9, exit code 137), an operator or a supervisor (SIGTERM, 143) stopped it rather than its payload failing it. A code listed in retry_exit_codes, discard_exit_codes or on_exit gets what the list says (on_exit: {137: dead_letter}); false leaves the others to retry_unknown_exit_codes, or dead-letters them"`
	OnExit                Rules             `yaml:"on_exit" help:"exit codes (1..255) with an action of their own (retry, discard or dead_letter) or a mapping with these keys"`
	Breaker               BreakerOptions    `yaml:"breaker" help:"the circuit breaker of the command, named exec:<argv0>, and for a command with arguments exec:<argv0>#<8 hex digits of a hash of them> (so that [/bin/sh, -c, ...] commands of different queues do not share one), and shared by every worker process, and by the exec handlers of every queue that run the same command, unless their breaker has a name of its own: handlers that share a breaker give it the same settings, or a worker refuses to start; on by default"`
}

// ExitError is a command that did not exit 0: it exited with a code, was
// killed by a signal, or ran past its timeout.
type ExitError struct {
	// Command is the program as configured (argv[0]).
	Command string
	// ExitCode is the exit status, or 128+N for signal N; -1 after a
	// timeout.
	ExitCode int
	// Signal is the signal that killed it, if the system reported one; a
	// shell reports a child a signal killed as exit code 128+N instead.
	Signal syscall.Signal
	// SignalRetried: the handler retries it because a signal killed it
	// (retry_signals), as no list of exit codes names its code.
	SignalRetried bool
	// TimedOut: it ran past Timeout and its process group was sent
	// SIGKILL.
	TimedOut bool
	Timeout  time.Duration
	// Output is the last lines of stderr, or of stdout when stderr was
	// empty (OutputName says which), made printable and bounded, with its
	// secrets hidden (as ops.RedactText hides them, and the env values
	// that are secrets) before it was cut.
	Output     string
	OutputName string
	// StdoutBytes and StderrBytes are how much it wrote in all.
	StdoutBytes, StderrBytes int64
	// Captured is the end of its stderr (of its stdout when stderr was
	// empty), at most engine.MaxOutputChars characters, for the failure
	// history; its secrets are hidden as in Output.
	Captured engine.Output
}

// FailureOutput is the end of the command's stderr (or stdout).
func (e *ExitError) FailureOutput() engine.Output { return e.Captured }

// TimeoutLimit is the timeout the command ran past; 0 when it did not.
func (e *ExitError) TimeoutLimit() time.Duration {
	if e.TimedOut {
		return e.Timeout
	}
	return 0
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("exec ")
	b.WriteString(truncate(e.Command, 100))
	switch {
	case e.TimedOut:
		fmt.Fprintf(&b, ": still running at its timeout %s; its process group was killed (SIGKILL)", e.Timeout)
	case e.Signal != 0:
		fmt.Fprintf(&b, ": killed by signal %d (%s), taken as exit code %d", int(e.Signal), e.Signal, e.ExitCode)
	case signalCode(e.ExitCode):
		sig := syscall.Signal(e.ExitCode - 128)
		fmt.Fprintf(&b, ": exit code %d, as a shell reports a child killed by signal %d (%s)", e.ExitCode, int(sig), sig)
	default:
		fmt.Fprintf(&b, ": exit code %d", e.ExitCode)
	}
	if e.SignalRetried {
		fmt.Fprintf(&b, "; retried, as a command killed by a signal did not choose to fail (retry_signals; on_exit: {%d: dead_letter} would dead-letter it at once)", e.ExitCode)
	}
	if !e.TimedOut && e.ExitCode == 128+int(syscall.SIGKILL) {
		b.WriteString("; the kernel's OOM killer is a common cause of signal 9: check the command's memory use against its memory limit (container, cgroup, ulimit) and the kernel log")
	}
	if e.Output != "" {
		total := e.StderrBytes
		if e.OutputName == "stdout" {
			total = e.StdoutBytes
		}
		fmt.Fprintf(&b, "; %s (last lines of %d bytes):\n%s", e.OutputName, total, e.Output)
	}
	return b.String()
}

// ErrorClass is "exec.timeout" or "exec.exit_<code>".
func (e *ExitError) ErrorClass() string {
	if e.TimedOut {
		return ClassExecTimeout
	}
	return "exec.exit_" + strconv.Itoa(e.ExitCode)
}

// StartError is a command that could not be started.
type StartError struct {
	Command string
	Err     error
	// Problem says what is wrong and what to fix, when the handler could
	// tell.
	Problem string
	// Permanent: the system cannot execute the program as it is (it is
	// neither a script with a #! line nor a binary for this system, or
	// permission is denied): no retry can start it, and the handler
	// returned it as engine.NonRetryable.
	Permanent bool
}

func (e *StartError) Error() string {
	err := e.Err
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "fork/exec" {
		err = pe.Err // its text repeats the program's path
	}
	msg := fmt.Sprintf("exec %s: could not start: %v", truncate(e.Command, 100), err)
	if e.Problem != "" {
		msg += "; " + e.Problem
	}
	return msg
}

func (e *StartError) Unwrap() error { return e.Err }

// ErrorClass is "exec.start".
func (e *StartError) ErrorClass() string { return ClassExecStart }

func init() {
	registry[TypeExec] = handlerType{build: buildExec, check: checkExec, options: ExecOptions{},
		summary: "runs a command with the job's payload on stdin and PGBUS_QUEUE, PGBUS_MSG_ID, PGBUS_KIND, PGBUS_ATTEMPT, PGBUS_IDEMPOTENCY_KEY and, with tracing on, TRACEPARENT and TRACESTATE in its environment, which is otherwise the worker's without its own PGBUS_ and trace variables and its database settings (DATABASE_URL, DATABASE_URL_FILE, PGPASSWORD, PGPASSFILE, the other libpq variables) unless env sets them; exit 0 succeeds, a retry exit code or a signal that killed the command (retry_signals) is retried, other codes dead-letter the message, and so does a program the system cannot execute (no #! line, no execute permission); at the timeout, and at a stopping worker's drain timeout, its process group is sent SIGKILL, with no SIGTERM first to clean up on, and the attempt retried (at a stop, its job given back), and what it leaves running in its group is sent SIGKILL when it exits: a program that must outlive its job must have left the group before the command exits, as with setsid -w sh -c 'prog >/dev/null 2>&1 </dev/null &', which returns once prog runs in a session of its own (a bare setsid prog & or setsid -f prog returns before that, and the program may be killed with the group)"}
}

func buildExec(spec Spec) (engine.HandlerFunc, engine.HandlerOptions, error) {
	h, opts, err := newExecHandler(spec, true)
	if err != nil {
		return nil, engine.HandlerOptions{}, typeError(TypeExec, err)
	}
	return h.handle, opts, nil
}

// checkExec checks an exec block without looking for its program and dir,
// which only the machines that run its workers need to have.
func checkExec(spec Spec) error {
	if _, _, err := newExecHandler(spec, false); err != nil {
		return typeError(TypeExec, err)
	}
	return nil
}

type execHandler struct {
	argv0   string // as configured
	path    string // resolved
	args    []string
	dir     string
	env     []string
	timeout time.Duration
	retry   map[int]bool
	discard map[int]bool
	onExit  map[int]bool
	// retryUnknown makes unlisted exit codes retryable.
	retryUnknown bool
	// retrySignals makes the unlisted codes of a command killed by a
	// signal retryable.
	retrySignals bool
	// secrets are the env values and arguments the command gets that are
	// secrets (see ExecOptions), hidden in what it writes.
	secrets sentSecrets
	// short backs off while the worker lacks what it takes to start a
	// command (workerShort).
	short shortBackoff
}

// newExecHandler checks an exec block and makes its handler; onDisk looks
// for its program and dir too, and replaces the ${NAME}s of env by the
// environment's variables, without which the handler is not ready to run.
func newExecHandler(spec Spec, onDisk bool) (*execHandler, engine.HandlerOptions, error) {
	if s, ok := spec.Options["command"].(string); ok {
		return nil, engine.HandlerOptions{}, stringCommandError(s)
	}
	o := ExecOptions{RetryExitCodes: []int{ExitTempFail}, RetrySignals: true}
	if err := decodeKeyed(spec, &o); err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	timeout, err := timeoutOf(spec)
	if err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	if len(o.Command) == 0 {
		return nil, engine.HandlerOptions{}, optionErrorf("command", "missing; give the program and its arguments as a list, such as [/usr/local/bin/charge, --live]")
	}
	for i, a := range o.Command {
		if strings.ContainsRune(a, 0) {
			return nil, engine.HandlerOptions{}, optionErrorf(fmt.Sprintf("command[%d]", i), "holds a NUL character")
		}
	}
	h := &execHandler{
		argv0: o.Command[0], args: o.Command[1:], timeout: timeout,
		retry: map[int]bool{}, discard: map[int]bool{}, onExit: map[int]bool{},
		retryUnknown: o.RetryUnknownExitCodes, retrySignals: o.RetrySignals,
	}
	if err := checkProgramName(h.argv0); err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	if onDisk {
		if h.path, err = findProgram(h.argv0); err != nil {
			return nil, engine.HandlerOptions{}, err
		}
	}
	// ${NAME} in dir is a place, not a secret, as env's _DIR values are.
	dir, _, known, err := expandOption("dir", "", o.Dir, onDisk)
	switch {
	case err != nil:
		return nil, engine.HandlerOptions{}, err
	case strings.ContainsRune(dir, 0):
		return nil, engine.HandlerOptions{}, optionErrorf("dir", "the path holds a NUL character")
	}
	if dir != "" && known && onDisk {
		shown := strconv.Quote(dir)
		if dir != o.Dir {
			shown += fmt.Sprintf(" (%s)", o.Dir)
		}
		st, err := os.Stat(dir)
		switch {
		case err != nil:
			return nil, engine.HandlerOptions{}, optionErrorf("dir", "%s: %v: create it, or fix dir", shown, pathReason(err))
		case !st.IsDir():
			return nil, engine.HandlerOptions{}, optionErrorf("dir", "%s is not a directory", shown)
		}
	}
	h.dir = dir
	h.secrets.addArgs(o.Command)
	h.secrets.addInherited(workerEnv())
	for _, name := range sortedKeys(o.Env) {
		key := "env." + name
		switch {
		case !validEnvName(name):
			return nil, engine.HandlerOptions{}, optionErrorf(key, "%q is not a variable name (letters, digits and _, not starting with a digit)", name)
		case strings.HasPrefix(strings.ToUpper(name), "PGBUS_"):
			return nil, engine.HandlerOptions{}, optionErrorf(key, "names starting with PGBUS_ are reserved for the job's details")
		}
		value, vars, _, err := expandOption("env", "variable "+name, o.Env[name], onDisk)
		switch {
		case err != nil:
			return nil, engine.HandlerOptions{}, entryAt(err, key)
		case strings.ContainsRune(value, 0):
			return nil, engine.HandlerOptions{}, optionErrorf(key, "the value holds a NUL character")
		}
		h.env = append(h.env, name+"="+value)
		h.secrets.addEnv(name, value)
		for _, v := range vars {
			h.secrets.add(v.Value) // kept out of the file, so a secret whatever the name
		}
	}
	seen := map[int]string{}
	for _, list := range []struct {
		key   string
		codes []int
		into  map[int]bool
	}{{retryKey(spec), o.RetryExitCodes, h.retry}, {"discard_exit_codes", o.DiscardExitCodes, h.discard}} {
		for _, code := range list.codes {
			if err := checkExitCode(list.key, code, seen); err != nil {
				return nil, engine.HandlerOptions{}, err
			}
			list.into[code] = true
		}
	}
	opts := engine.HandlerOptions{Timeout: timeout}
	for _, k := range sortedKeys(o.OnExit) {
		key := "on_exit." + k
		code, err := strconv.Atoi(k)
		if err != nil {
			return nil, engine.HandlerOptions{}, optionErrorf(key, "%q is not an exit code; use a number in 1..255", k)
		}
		if err := checkExitCode(key, code, seen); err != nil {
			return nil, engine.HandlerOptions{}, err
		}
		p, err := o.OnExit[k].policy(key)
		if err != nil {
			return nil, engine.HandlerOptions{}, err
		}
		if p.Action == engine.ActionRetryAfterHint {
			return nil, engine.HandlerOptions{}, optionErrorf(key, "a command gives no retry hint; use retry")
		}
		p.Class = "exec.exit_" + strconv.Itoa(code)
		h.onExit[code] = true
		opts.Policies = append(opts.Policies, p)
	}
	slices.SortFunc(opts.Policies, func(a, b engine.ErrorPolicy) int { return exitOf(a.Class) - exitOf(b.Class) })
	if opts.Breaker, err = o.Breaker.config(execBreakerName(h.argv0, h.args)); err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	return h, opts, nil
}

// execBreakerName is the name of a command's breaker unless the options
// give one: exec:<argv0>, and for a command with arguments a short hash of
// them after it. The same program with other arguments (an interpreter
// above all: sh -c '...', python3 job.py) is another downstream, whose
// failures must not hold this one's jobs; the arguments are hashed, not
// shown, as they may hold secrets.
func execBreakerName(argv0 string, args []string) string {
	if len(args) == 0 {
		return "exec:" + argv0
	}
	h := sha256.New()
	for _, a := range args {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("exec:%s#%x", argv0, h.Sum(nil)[:4])
}

// asList writes command, a command written as one string, as the list
// the file would give instead: the words a shell would split it into
// or, when it needs a shell to run as written (needsShell: a pipeline, a
// list, a redirection, an expansion ($NAME, *.json, ~), an assignment
// before its program),
// [/bin/sh, -c, command]. Its secrets are hidden as addArgs reads them,
// whatever their length, in a shell command within it too (shellEdits):
// the value of --token, of -H 'Authorization: ...' or of TOKEN=... is no
// more quoted in an error than it is in what the command writes. It
// reports whether the list is a shell's.
func asList(command string) (string, bool) {
	split := splitShell(command)
	if len(split.commands) == 0 {
		return "[/usr/local/bin/charge, --live]", false
	}
	var s sentSecrets
	for _, c := range split.commands {
		s.addWords(wordTexts(c), 1, false)
	}
	quoted, shell := applyEdits(command, shellEdits(command, 1, false)), split.needsShell()
	words := []string{"/bin/sh", "-c", quoted}
	if !shell {
		words = shellWords(quoted)
	}
	for i, w := range words {
		words[i] = strconv.Quote(s.hideString(w))
	}
	return "[" + strings.Join(words, ", ") + "]", shell
}

// stringCommandError explains that command, the command written as one
// string, needs to be a list, and gives the list (asList).
func stringCommandError(command string) error {
	list, shell := asList(command)
	if shell {
		return optionErrorf("command", "is a string, which is not run through a shell, and this command needs one (for a pipeline, a list, a redirection, an expansion ($NAME, *.json, ~) or an assignment before its program); give it to a shell as a list, such as %s", list)
	}
	return optionErrorf("command", "is a string; give the program and its arguments as a list, such as %s (it is not run through a shell; for one, use [/bin/sh, -c, \"...\"])", list)
}

func exitOf(class string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(class, "exec.exit_"))
	return n
}

// retryDefaultKey names retry_exit_codes in the codes already seen when
// the block leaves it to its default, [75], so that a clash says so.
const retryDefaultKey = "retry_exit_codes (default)"

func retryKey(spec Spec) string {
	if _, set := spec.Options["retry_exit_codes"]; set {
		return "retry_exit_codes"
	}
	return retryDefaultKey
}

// checkExitCode accepts a code in 1..255 that no other list has.
func checkExitCode(key string, code int, seen map[int]string) error {
	if code == 0 {
		return optionErrorf(key, "exit code 0 is success and cannot be listed")
	}
	if code < 0 || code > 255 {
		return optionErrorf(key, "exit code %d is out of range 1..255", code)
	}
	if other, ok := seen[code]; ok {
		if other == key {
			return optionErrorf(key, "exit code %d is listed twice", code)
		}
		if other == retryDefaultKey {
			return optionErrorf(key, "exit code %d is also in retry_exit_codes, where it is by default (EX_TEMPFAIL); give each code one outcome: set retry_exit_codes without it, such as retry_exit_codes: []", code)
		}
		return optionErrorf(key, "exit code %d is also in %s; give each code one outcome", code, other)
	}
	seen[code] = key
	return nil
}

// checkProgramName checks that argv0 is an absolute path or a bare name
// to look for on PATH, whatever this machine has.
func checkProgramName(argv0 string) error {
	switch {
	case argv0 == "":
		return optionErrorf("command", "the program (first element) is empty")
	case !filepath.IsAbs(argv0) && strings.ContainsRune(argv0, '/'):
		return optionErrorf("command", "program %q is a relative path; give an absolute path or a name found on PATH", argv0)
	}
	return nil
}

// findProgram checks that argv0 (which checkProgramName accepted) names an
// executable on this machine: an absolute path, or a name found on PATH.
// It returns the path to run.
func findProgram(argv0 string) (string, error) {
	switch {
	case filepath.IsAbs(argv0):
		st, err := os.Stat(argv0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", optionErrorf("command", "program %q does not exist: install it, or fix the path in command; a worker looks for it when it starts (later, while a deploy replaces it, its jobs are retried)", argv0)
		case err != nil:
			return "", optionErrorf("command", "program %q: %v", argv0, pathReason(err))
		case st.IsDir():
			return "", optionErrorf("command", "program %q is a directory", argv0)
		case st.Mode()&0o111 == 0:
			return "", optionErrorf("command", "program %q is not executable (chmod +x it)", argv0)
		case !executable(argv0):
			return "", optionErrorf("command", "program %q is not executable by this user (%s): chmod it, or check that its filesystem is not mounted noexec", argv0, whoAmI())
		}
		return argv0, nil
	}
	path, err := exec.LookPath(argv0)
	if err != nil || !filepath.IsAbs(path) {
		return "", optionErrorf("command", "program %q is not found on PATH (%s); install it or give an absolute path", argv0, os.Getenv("PATH"))
	}
	return path, nil
}

// whoAmI names the user the worker runs as, for errors about permissions.
func whoAmI() string { return fmt.Sprintf("uid %d", os.Geteuid()) }

func pathReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// handle runs the command for one job.
func (h *execHandler) handle(ctx context.Context, job *engine.Job) error {
	if held := h.short.held(time.Now()); held != nil {
		return held // the worker lacked what a command takes a moment ago
	}
	runCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, h.path, h.args...)
	cmd.Args[0] = h.argv0
	cmd.Dir = h.dir
	cmd.Env = append(append(workerEnv(), h.env...),
		EnvQueue+"="+job.Queue,
		EnvMsgID+"="+strconv.FormatInt(job.ID, 10),
		EnvKind+"="+job.Kind,
		EnvAttempt+"="+strconv.Itoa(job.Attempt),
		EnvIdempotencyKey+"="+job.IdempotencyKey,
	)
	cmd.Env = append(cmd.Env, traceEnv(ctx)...)
	cmd.Stdin = bytes.NewReader(job.Payload)
	stdout, stderr := capture{sent: h.secrets}, capture{sent: h.secrets}
	out, err := newOutputs(&stdout, &stderr)
	if err != nil {
		return h.startError(err)
	}
	defer out.close()
	cmd.Stdout, cmd.Stderr = out.w[0], out.w[1]
	// Its own process group, so that a timeout kills what it started too.
	release := ownProcessGroup(cmd)
	defer release()
	// cut records that pgbus killed the command, at the timeout or as the
	// worker stops, rather than the command ending on its own.
	var cut atomic.Bool
	cmd.Cancel = func() error { cut.Store(true); return killGroup(cmd.Process) }
	cmd.WaitDelay = waitDelay
	err = cmd.Start()
	out.started()
	if err != nil {
		return h.startError(err)
	}
	h.short.started()
	err = cmd.Wait()
	// It exited: what it started and left in its group goes now, whatever
	// its exit code, and whether or not it still held the output (a
	// failed attempt's leftovers ran on beside its retries, and a
	// succeeded one's piled up, one per job). A program that means to
	// outlive its job has left the group for a session of its own before
	// the command exited (setsid -w sh -c 'prog &'); a child that had
	// not called setsid yet is still a leftover. What they wrote before
	// stays in the pipes, read to their end here.
	killLeftovers(cmd.Process.Pid)
	out.drained(waitDelay)
	out.close()
	state := cmd.ProcessState
	// Cut off only when pgbus killed it before it exited: a command that
	// exited on its own gets what its exit says, though the stop or the
	// timeout came while what it left outside its group (setsid) still
	// held its output. It ran to its end: giving its job back would run
	// it again.
	cutOff := cut.Load() && !exitedItself(state)
	if cutOff && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err() // the worker is stopping
	}
	e := &ExitError{Command: h.argv0, StdoutBytes: stdout.total, StderrBytes: stderr.total, Timeout: h.timeout}
	e.OutputName, e.Output = "stderr", lastLines(stderr.shown(), outputLines, outputBytes)
	if e.Output == "" {
		e.OutputName, e.Output = "stdout", lastLines(stdout.shown(), outputLines, outputBytes)
	}
	if e.Output == "" {
		e.OutputName = ""
	}
	e.Captured = captured(&stderr, &stdout)
	if cutOff {
		e.TimedOut, e.ExitCode = true, -1
		return e
	}
	if state == nil {
		return &StartError{Command: h.argv0, Err: err}
	}
	if state.Success() {
		return nil
	}
	e.ExitCode = state.ExitCode()
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal()
		e.ExitCode = 128 + int(e.Signal)
	}
	return h.classify(e)
}

// startError explains why the command could not start. A program the
// system cannot execute is a mistake of configuration no retry fixes
// (Build checked that it exists and is executable, but cannot tell a
// script without its #! line), so it is non-retryable. Something missing
// is retried: Build found it when the worker started, so it was removed
// since, most likely by a deploy replacing it, which the next attempt may
// find done; should it stay gone, the command's circuit breaker (unless
// turned off) soon snoozes the jobs instead of using their attempts.
func (h *execHandler) startError(err error) error {
	e := &StartError{Command: h.argv0, Err: err}
	if short, ok := workerShort(err); ok {
		// The worker's lack, not the job's: the job goes back without
		// using an attempt, which would dead-letter good jobs.
		e.Problem = short
		return h.short.failed(e, time.Now())
	}
	e.Problem, e.Permanent = startProblem(err, h.path, h.dir)
	if e.Permanent {
		return engine.NonRetryable(e)
	}
	return e
}

// workerEnv is the worker's environment without its PGBUS_ variables,
// which would be mistaken for the job's, and without WithheldEnv.
func workerEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		// Upper case: names are case-insensitive on Windows.
		if !strings.HasPrefix(kv, "PGBUS_") && !withheld[strings.ToUpper(name)] {
			out = append(out, kv)
		}
	}
	return out
}

// traceEnv is the attempt's trace context, when a tracer started its span
// in ctx, as EnvTraceparent and EnvTracestate: the values the http handler
// sends in its traceparent and tracestate headers.
func traceEnv(ctx context.Context) []string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	var env []string
	for _, v := range [][2]string{{EnvTraceparent, "traceparent"}, {EnvTracestate, "tracestate"}} {
		if value := c.Get(v[1]); value != "" {
			env = append(env, v[0]+"="+value)
		}
	}
	return env
}

// classify turns a failed exit into the error that tells the engine what
// to do.
func (h *execHandler) classify(e *ExitError) error {
	switch code := e.ExitCode; {
	case h.onExit[code]:
		return e // the on_exit policy decides
	case h.retry[code]:
		return e
	case h.discard[code]:
		return engine.Discard(e)
	case h.retryUnknown:
		return e
	case h.retrySignals && (e.Signal != 0 || signalCode(code)):
		// The kernel (its OOM killer), an operator or a supervisor killed
		// it, or it crashed: no verdict of the program on its payload.
		e.SignalRetried = true
		return e
	default:
		return engine.NonRetryable(e)
	}
}

// signalCode reports whether code is 128+N for a signal N (1 to 64, the
// last of Linux's real-time signals), as a shell reports a child a signal
// killed.
func signalCode(code int) bool { return code > 128 && code <= 128+64 }

// captured is the end of a command's stderr, or of its stdout when it
// wrote nothing to stderr.
func captured(stderr, stdout *capture) engine.Output {
	c, source := stderr, "stderr"
	if c.total == 0 {
		c, source = stdout, "stdout"
	}
	return output(source, c.shown(), c.clipped(), true)
}

// outputs carries a command's stdout and stderr into their captures
// through pipes of the handler's own, so that it sees whether what the
// command started still holds them once it exited: os/exec tells that
// (ErrWaitDelay) only of a command that exited 0.
type outputs struct {
	r, w [2]*os.File // stdout's and stderr's read and write ends
	done chan struct{}
	once sync.Once
}

// newOutputs makes the pipes and starts copying them into stdout and
// stderr.
func newOutputs(stdout, stderr *capture) (*outputs, error) {
	o := &outputs{done: make(chan struct{})}
	for i := range o.r {
		r, w, err := os.Pipe()
		if err != nil {
			for j := range i {
				_, _ = o.r[j].Close(), o.w[j].Close()
			}
			return nil, err
		}
		o.r[i], o.w[i] = r, w
	}
	var wg sync.WaitGroup
	for i, c := range []*capture{stdout, stderr} {
		wg.Go(func() { _, _ = io.Copy(c, o.r[i]) })
	}
	go func() { wg.Wait(); close(o.done) }()
	return o, nil
}

// started closes the write ends once the command has its own copies (or
// could not start), so that the copies end when the command's do.
func (o *outputs) started() {
	for _, f := range o.w {
		_ = f.Close()
	}
}

// drained waits up to d for every process holding the pipes to close
// them, and reports whether they did.
func (o *outputs) drained(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-o.done:
		return true
	case <-t.C:
		return false
	}
}

// close ends the copies, cutting off what a process outside the command's
// group still writes, and waits for them: the captures are whole after it.
func (o *outputs) close() {
	o.once.Do(func() {
		for _, f := range o.r {
			_ = f.Close()
		}
		<-o.done
	})
}

// capture keeps the first MaxCapture bytes of an output and its last
// tailKeep bytes, and counts the rest; it never blocks the writer.
type capture struct {
	head  []byte
	tail  []byte
	total int64
	// text is shown's, worked out once: redaction reads all of it.
	text *string
	// sent are the secrets the handler gave the command, hidden in text.
	sent sentSecrets
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := MaxCapture - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*tailKeep {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-tailKeep:]...)
	}
	return len(p), nil
}

// last returns the end of the output: all of it when it fits MaxCapture,
// else its last tailKeep bytes or more.
func (c *capture) last() []byte {
	if c.total <= MaxCapture {
		return c.head
	}
	return c.tail
}

// clipped reports whether last is only the end of the output, cut off at
// an arbitrary byte.
func (c *capture) clipped() bool { return c.total > MaxCapture }

// shown is the end of the output as text to quote, its secrets and the
// handler's hidden (shownText). Call it once the command has exited.
func (c *capture) shown() string {
	if c.text == nil {
		s := shownText(c.last(), c.clipped(), c.sent)
		c.text = &s
	}
	return *c.text
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
