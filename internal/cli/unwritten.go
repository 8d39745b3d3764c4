package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// unwritten is the error of a command that ran but whose output could not
// all be written (a full disk, a reader gone away): werr. Its kind and
// exit code are those of status, the error of the command's own outcome
// (a not-found id), or a plain failure: never "unavailable" with a health
// check to run first, which would tell a script to run a write again.
type unwritten struct {
	werr   error
	status error
	cmd    string
	op     string // the write operation that ran, or "" for a read
}

func (e unwritten) Error() string {
	msg := fmt.Sprintf("%v; %s ran all the same, but its output is not all written", e.werr, e.cmd)
	if e.status != nil {
		msg += "; it ended: " + e.status.Error()
	}
	return msg
}

func (e unwritten) Unwrap() error { return e.status }

// steps are the next steps of a command whose output was cut: what the
// write did is in the audit log, and a read can be run again.
func (e unwritten) steps() []ops.Hint {
	if e.op == "" {
		return nil
	}
	return []ops.Hint{{Op: ops.OpAudit, Args: map[string]any{"tool": e.op}, Why: "what the " + e.cmd + " did"}}
}

// ranUnwritten is what run returns when the operation ran and only
// writing its result failed: the status, if its outcome was an error.
type ranUnwritten struct{ status error }

func (e ranUnwritten) Error() string { return "the result could not all be written" }
func (e ranUnwritten) Unwrap() error { return e.status }

// outputFailed is the error to report for cmd, whose error was err, once
// its output could not all be written (werr, the raw write error raw),
// and whether to report one at all: a read whose reader went away (| head)
// has nobody to tell.
func outputFailed(cmd *cobra.Command, err, werr, raw error) (error, bool) {
	var ran ranUnwritten
	var status error
	switch {
	case errors.As(err, &ran):
		status = ran.status
	case err == nil || errors.Is(err, raw):
	case errors.Is(err, context.Canceled) && !errors.As(err, new(*ops.PartlyDone)) && !errors.As(err, new(sendStopped)):
		// Stopped by the failed write, which cancels the command, with
		// nothing to say of how far it got.
	default:
		return err, true // the command's own failure, which says more
	}
	if helped(cmd) {
		// A command's help ran nothing, whatever the command does.
		if errors.Is(werr, syscall.EPIPE) {
			return nil, false
		}
		return fmt.Errorf("%v; the help of %s is not all written", werr, cmd.CommandPath()), true
	}
	op := auditedOp(cmd)
	if op == "" && errors.Is(werr, syscall.EPIPE) {
		return status, false
	}
	return unwritten{werr: werr, status: status, cmd: cmd.CommandPath(), op: op}, true
}

// helped reports whether cmd was asked for its help (--help) rather than
// run.
func helped(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	help, err := cmd.Flags().GetBool("help")
	return err == nil && help
}

// nextSteps are the next steps of err: the operations layer's, and for a
// write whose output was cut, its entries in the audit log.
func nextSteps(err error) []ops.Hint {
	var u unwritten
	if errors.As(err, &u) {
		return append(u.steps(), ops.NextSteps(u.status)...)
	}
	return ops.NextSteps(err)
}

// auditedOp is the write operation cmd, run without --dry-run, runs (one
// the operations layer records in the audit log), or "".
func auditedOp(cmd *cobra.Command) string {
	if cmd == nil {
		return ""
	}
	if dry, err := cmd.Flags().GetBool("dry-run"); err == nil && dry {
		return ""
	}
	path := cmd.CommandPath()
	if path == "pgbus dlq retry-all" {
		path = vocab.CommandName(ops.OpDLQRetry)
	}
	i := slices.IndexFunc(ops.AuditedOps, func(op string) bool { return vocab.CommandName(op) == path })
	if i < 0 {
		return ""
	}
	return ops.AuditedOps[i]
}
