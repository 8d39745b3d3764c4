package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// maxRefusalCommand bounds the command a refusal quotes: a longer one
// (ids by the thousand, say) gives way to the command's name.
const maxRefusalCommand = 4 << 10

// Refusals returns, on a read-only operations layer, the write tools that
// All leaves out, each with a handler that changes nothing: it checks the
// call as the operation would (ops.Service.CheckCall, which only reads),
// answering a call no server could make with the error a writable server
// gives, and any other with a tool error naming the pgbus command an
// operator can run to do what the call asked, with its arguments when
// they can be read. On a writable layer it returns none.
func Refusals(d Deps) []server.ServerTool {
	if !d.Ops.ReadOnly() {
		return nil
	}
	return []server.ServerTool{
		refusing(d, dlqRetryTool(), ops.OpDLQRetry, func(in DLQRetryInput) (any, ops.Hint, error) {
			req, err := in.request()
			return req, req.Hint(""), err
		}),
		refusing(d, dlqDiscardTool(), ops.OpDLQDiscard, func(in DLQDiscardInput) (any, ops.Hint, error) {
			req, err := in.request()
			return req, req.Hint(""), err
		}),
		answeringRestoreDryRun(d, refusing(d, dlqRestoreTool(), ops.OpDLQRestore, func(in DLQRestoreInput) (any, ops.Hint, error) {
			req := in.request()
			return req, req.Hint(""), nil
		})),
		refusing(d, dlqPurgeTool(), ops.OpDLQPurge, func(in DLQPurgeInput) (any, ops.Hint, error) {
			req, err := in.request()
			return req, req.Hint(""), err
		}),
		refusing(d, queuePauseTool(), ops.OpQueuePause, func(in QueuePauseInput) (any, ops.Hint, error) {
			req := in.request()
			return req, req.Hint(ops.OpQueuePause, ""), nil
		}),
		refusing(d, queueResumeTool(), ops.OpQueueResume, func(in QueuePauseInput) (any, ops.Hint, error) {
			req := in.request()
			return req, req.Hint(ops.OpQueueResume, ""), nil
		}),
		refusing(d, queueRunNowTool(), ops.OpQueueRunNow, func(in QueueRunNowInput) (any, ops.Hint, error) {
			req := in.request()
			return req, req.Hint(""), nil
		}),
		refusing(d, circuitResetTool(), ops.OpCircuitReset, func(in CircuitResetInput) (any, ops.Hint, error) {
			req := in.request()
			return req, req.Hint(""), nil
		}),
		refusing(d, circuitOpenTool(), ops.OpCircuitOpen, func(in CircuitOpenInput) (any, ops.Hint, error) {
			req, err := in.request()
			return req, req.Hint(""), err
		}),
	}
}

// refusing is tool t answering every call with a refusal. The call's
// arguments are read as the real tool reads them and turned by call into
// the same operation's request and the request as a hint. Arguments that
// cannot be read, or a request its operation op would refuse, are
// answered as the real tool answers them: the command they would leave
// would fail, or do something else (a purge's of every DLQ and every
// age).
func refusing[In any](d Deps, t mcp.Tool, op string, call func(In) (any, ops.Hint, error)) server.ServerTool {
	return server.ServerTool{
		Tool: t,
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rl := d.relay()
			var in In
			if err := decodeArgs(req, &in); err != nil {
				return errorResult(err, rl), nil
			}
			r, h, err := call(in)
			if err == nil {
				err = d.Ops.CheckCall(ctx, op, r)
			}
			if err != nil {
				return errorResult(err, rl), nil
			}
			if h.Op == "" {
				h.Op = op
			}
			return refusal(t.Name, h, rl), nil
		},
	}
}

// refusal is the answer of a read-only server to a call of write tool
// tool: what happened, and what the agent can do about it, which is to
// pass on the command h renders to. The command confirms (--yes) only
// what the call confirmed: a purge or discard the call did not confirm,
// which a writable server would refuse until checked, is the command
// that says what it would touch and changes nothing.
func refusal(tool string, h ops.Hint, r relay) *mcp.CallToolResult {
	return refusalSaying(tool, "", h, r)
}

// refusalSaying is refusal, saying first what the server could answer
// of the call (said, a sentence, or "").
func refusalSaying(tool, said string, h ops.Hint, r relay) *mcp.CallToolResult {
	command, why := r.command(vocab.CommandName(h.Op)), ""
	if len(h.Args) > 0 {
		if full := vocab.CallCommand(h); len(full) <= maxRefusalCommand {
			command, why = r.command(full), h.Why
		}
	}
	run := command
	if why != "" {
		run += " (" + why + ")"
	}
	if said != "" {
		said += " "
	}
	text, _ := ops.RedactText(tool + " is not available: this server is read-only, and nothing was changed. " + said + "Tell the user; an operator can run: " + run)
	text = escapeHidden(text)
	return withErrorMeta(mcp.NewToolResultError(text), errorMeta{Kind: ops.KindReadOnly, Next: []nextCall{commandCall(command, refusedWhy(why))}})
}

// refusedWhy is why the step of a refusal is a command, after what it
// does (why), as a read-only server's hints to write tools say it.
func refusedWhy(why string) string {
	const readOnly = "this server is read-only: ask an operator to run the command"
	if why == "" {
		return readOnly
	}
	why, _ = ops.RedactText(why + " (" + readOnly + ")")
	return why
}

// answeringRestoreDryRun is t, the refusal of pgbus_dlq_restore, answering
// the question a dry run asks as well, which a read-only server can read
// (ops.Service.PreviewRestore): a dry run it relays, as it relays every
// write call, says what a restore would do now, id by id, in its text and
// in its _meta (dry_run: the dry run's result, but for its next steps,
// which are the refusal's), and names the restore of the ids that would
// be restored as the command to run, rather than the dry run, whose
// answer it gave. A preview that cannot be read, or finds none left to
// restore since the call was checked, leaves the refusal as it was.
func answeringRestoreDryRun(d Deps, t server.ServerTool) server.ServerTool {
	relayed := t.Handler
	t.Handler = func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := relayed(ctx, req)
		var in DLQRestoreInput
		if err != nil || ErrorKind(res) != ops.KindReadOnly || decodeArgs(req, &in) != nil || !in.DryRun {
			return res, err
		}
		preview, perr := d.Ops.PreviewRestore(ctx, in.request())
		if perr != nil || preview.Restored == 0 || len(preview.Next) == 0 || preview.Next[0].Op != ops.OpDLQRestore {
			return res, nil
		}
		restore := preview.Next[0]
		restore.Why = ""
		said := fmt.Sprintf("Its dry run, read here: %d of the %s given would be restored to %s", preview.Restored,
			plural.Count(preview.Restored+preview.NotFound+preview.Refused, "id", "ids"), preview.DLQ)
		if preview.NotFound+preview.Refused == 0 {
			all := fmt.Sprintf("all %d ids", preview.Restored)
			if preview.Restored == 1 {
				all = "the id"
			}
			said = fmt.Sprintf("Its dry run, read here: %s given would be restored to %s", all, preview.DLQ)
		}
		if preview.FirstError != "" {
			said += "; not all: " + preview.FirstError
		}
		out := refusalSaying(t.Tool.Name, said+".", restore, d.relay())
		m := out.Meta.AdditionalFields[ErrorMetaKey].(errorMeta)
		preview.Next = []ops.Hint{}
		m.DryRun = &preview
		return withErrorMeta(out, m), nil
	}
	return t
}
