package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/ops"
)

// errorJSON is the error of a command run with --json, as it prints it on
// stderr: one object on one line, for scripts that parse its result.
type errorJSON struct {
	// Error is the line the command prints without --json, after "pgbus: ".
	Error string `json:"error"`
	// Kind is ops.ErrorKind's word for it, or ops.KindUsage for a command
	// line that is wrong.
	Kind     string     `json:"kind"`
	ExitCode int        `json:"exit_code"`
	Next     []nextStep `json:"next"`
	// PartlyDone is how much a bulk retry, discard or purge did before it
	// stopped, which stays done.
	PartlyDone *partlyDoneJSON `json:"partly_done,omitempty"`
}

// nextStep is a next step of an error, as the command line to run.
type nextStep struct {
	Command string `json:"command"`
	Why     string `json:"why"`
}

type partlyDoneJSON struct {
	Done  int64 `json:"done"`
	Limit int64 `json:"limit,omitempty"`
	// Unsure are the messages that may or may not have been handled,
	// counted neither in done nor in the limit of the command again.
	Unsure []ops.DeadID `json:"unsure,omitempty"`
}

// printError prints a command's error on stderr: line, its words
// (already redacted), as "pgbus: <line>", or with asJSON as an errorJSON
// of exit code code and of cause, the error before a stop by a signal
// reworded it, which keeps its kind, its next steps (but the command
// self, which is the one that failed) and how much was done.
func (a *app) printError(w io.Writer, asJSON bool, line string, code int, cause error, self string) {
	if !asJSON {
		_, _ = w.Write(terminalSafe([]byte("pgbus: " + line + "\n")))
		return
	}
	out := errorJSON{Error: line, Kind: errorKind(cause, code), ExitCode: code, Next: a.nextCommands(cause, self)}
	if p := (*ops.PartlyDone)(nil); errors.As(cause, &p) {
		out.PartlyDone = &partlyDoneJSON{Done: p.Done, Limit: p.Limit, Unsure: p.Unsure}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out) // one line: Encode indents nothing and ends it with a newline
	// encoding/json writes C1 controls as they are; escaped, they read
	// back the same and cannot drive the terminal stderr may be.
	_, _ = w.Write(terminalSafe(buf.Bytes()))
}

// nextCommands are the next steps of cause, an error of the command self,
// as command lines: those its line names.
func (a *app) nextCommands(cause error, self string) []nextStep {
	next := []nextStep{}
	for _, h := range stepsBeyond(cause, self) {
		command, _ := ops.RedactText(a.command(h))
		why, _ := ops.RedactText(h.Why)
		next = append(next, nextStep{Command: command, Why: why})
	}
	if s := (sendStopped{}); errors.As(cause, &s) {
		for _, step := range s.steps(a) {
			step.Command, _ = ops.RedactText(step.Command)
			next = append(next, step)
		}
	}
	return next
}

// errorKind is the kind of cause, an error of exit code code: a usage
// error (exit 2) of no kind of the operations layer's is one of the
// command line, such as a flag of the wrong type.
func errorKind(cause error, code int) string {
	kind := ops.ErrorKind(cause)
	if code == ExitUsage && kind != ops.KindInvalid && kind != ops.KindReadOnly {
		return ops.KindUsage
	}
	return kind
}

// errorsAsJSON reports whether the error of cmd, run with args, goes to
// stderr as JSON: cmd takes --json and it is set. When cmd's flags could
// not be parsed (flagsFailed), --json may come after the one that failed,
// unparsed, and a mistyped subcommand (pgbus dlq lsit --json) leaves cmd
// its group, which takes no --json: then it counts where args give it
// before a "--", the last one winning as in parsing.
func errorsAsJSON(cmd *cobra.Command, args []string, flagsFailed bool) bool {
	switch {
	case cmd == nil:
		return false
	case cmd.HasSubCommands(): // the group of a mistyped subcommand
	case cmd.Flags().Lookup("json") == nil:
		return false
	case !flagsFailed:
		on, _ := cmd.Flags().GetBool("json")
		return on
	}
	on := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" {
			on = true
		} else if v, ok := strings.CutPrefix(a, "--json="); ok {
			b, err := strconv.ParseBool(v)
			on = b || err != nil // --json=maybe asked for JSON, and is itself the flag that failed
		}
	}
	return on
}
