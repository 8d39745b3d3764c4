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
		answeringRetryDryRun(d, refusing(d, dlqRetryTool(), ops.OpDLQRetry, func(in DLQRetryInput) (any, ops.Hint, error) {
			req, err := in.request()
			return req, req.Hint(""), err
		})),
		answeringDiscardDryRun(d, refusing(d, dlqDiscardTool(), ops.OpDLQDiscard, func(in DLQDiscardInput) (any, ops.Hint, error) {
			req, err := in.request()
			return req, req.Hint(""), err
		})),
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
		answeringRunNowDryRun(d, refusing(d, queueRunNowTool(), ops.OpQueueRunNow, func(in QueueRunNowInput) (any, ops.Hint, error) {
			req := in.request()
			return req, req.Hint(""), nil
		})),
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

// dryRunAnswer is what a read-only server read of a dry run it relays:
// said, the sentence of its answer; result, the dry run's result (a
// pointer), its next steps left out, as they are the answer's; and
// call, the write to name as the command, as the dry run's next step
// names it. A dry run that would change nothing names no call: next, the
// dry run's own next steps, are the answer's.
type dryRunAnswer struct {
	said   string
	result any
	call   ops.Hint
	next   []ops.Hint
}

// answeringDryRun is t, the refusal of write tool op, answering the
// question a dry run asks as well, which a read-only server can read
// (preview, through ops' Preview methods, which write nothing, audit
// included): a dry run it relays, as it relays every write call, says
// what the call would do now in its text and in its _meta (dry_run: the
// dry run's result, but for its next steps, which are the refusal's),
// and names as the command the call itself, as the dry run's next step
// names it (by ids, those that would move; by filter, guarded by the
// expect of the set it saw), rather than the dry run, whose answer it
// gave. A dry run that would change nothing is answered the same way,
// with no command to relay: its next steps are the dry run's own. A
// preview that cannot be read leaves the refusal as it was.
func answeringDryRun[In any](d Deps, t server.ServerTool, dryRun func(In) bool, preview func(context.Context, In) (dryRunAnswer, bool)) server.ServerTool {
	relayed := t.Handler
	t.Handler = func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := relayed(ctx, req)
		var in In
		if err != nil || ErrorKind(res) != ops.KindReadOnly || decodeArgs(req, &in) != nil || !dryRun(in) {
			return res, err
		}
		a, ok := preview(ctx, in)
		if !ok {
			return res, nil
		}
		out := answeredNothing(t.Tool.Name, a.said, a.next, d.relay())
		if a.call.Op != "" {
			a.call.Why = ""
			out = refusalSaying(t.Tool.Name, "Its dry run, read here: "+a.said+".", a.call, d.relay())
		}
		m := out.Meta.AdditionalFields[ErrorMetaKey].(errorMeta)
		WordNotes(a.result)
		m.DryRun = a.result
		return withErrorMeta(out, m), nil
	}
	return t
}

// answeredNothing is the answer of a read-only server to the dry run of
// write tool tool that would change nothing: what it read (said, a
// sentence), with no command to relay, and next, the dry run's next
// steps, as its own (a write among them as the command an operator
// runs).
func answeredNothing(tool, said string, next []ops.Hint, r relay) *mcp.CallToolResult {
	text, _ := ops.RedactText(tool + " is not available: this server is read-only, and nothing was changed. Its dry run, read here: " + said + ", so an operator has nothing to run" + hintText(next, r))
	text = escapeHidden(text)
	return withErrorMeta(mcp.NewToolResultError(text), errorMeta{Kind: ops.KindReadOnly, Next: nextCalls(next, r)})
}

// callIn is the first step of next that makes op, not as a dry run: the
// call a dry run's answer names.
func callIn(next []ops.Hint, op string) (ops.Hint, bool) {
	for _, h := range next {
		if h.Op == op && h.Args["dry_run"] != true {
			return h, true
		}
	}
	return ops.Hint{}, false
}

// idsSaid says of a dry run by ids that done of the given ids would be
// what (retried, discarded, restored to orders_dlq); firstError, when
// not all would, why one would not.
func idsSaid(done, given int, what, firstError string) string {
	said := fmt.Sprintf("%d of the %s given would be %s", done, plural.Count(given, "id", "ids"), what)
	switch {
	case done == 0 && given == 1:
		said = "the id given would not be " + what
	case done == 0:
		said = fmt.Sprintf("none of the %d ids given would be %s", given, what)
	case done == given && done == 1:
		said = "the id given would be " + what
	case done == given:
		said = fmt.Sprintf("all %d ids given would be %s", done, what)
	}
	return said + whyNotAll(done, firstError)
}

// whyNotAll is firstError, why a message would not be moved, as said
// after a dry run's count done: "" when there is none.
func whyNotAll(done int, firstError string) string {
	switch {
	case firstError == "":
		return ""
	case done == 0:
		return ": " + firstError
	}
	return "; not all: " + firstError
}

// filterSaid says of a dry run by filter that done dead messages would be
// what (retried, discarded), limitReached saying more match past the
// limit; firstError, when some would not, why one would not.
func filterSaid(done int, what string, limitReached bool, firstError string) string {
	said := plural.Count(done, "dead message", "dead messages") + " would be " + what
	switch {
	case done == 0 && firstError == "":
		said = "no dead message matches the filters: none would be " + what
	case done == 0:
		said = "no dead message would be " + what
	case limitReached:
		said += ", as many as the limit takes: more match the filters"
	}
	return said + whyNotAll(done, firstError)
}

// answeringRestoreDryRun is t, the refusal of pgbus_dlq_restore, answering
// a restore's dry run (answeringDryRun) with what a restore would do now,
// id by id (ops.Service.PreviewRestore).
func answeringRestoreDryRun(d Deps, t server.ServerTool) server.ServerTool {
	return answeringDryRun(d, t, func(in DLQRestoreInput) bool { return in.DryRun }, func(ctx context.Context, in DLQRestoreInput) (dryRunAnswer, bool) {
		p, err := d.Ops.PreviewRestore(ctx, in.request())
		call, ok := callIn(p.Next, ops.OpDLQRestore)
		if err != nil || p.Restored == 0 || !ok {
			return dryRunAnswer{}, false
		}
		p.Next = []ops.Hint{}
		return dryRunAnswer{said: idsSaid(p.Restored, p.Restored+p.NotFound+p.Refused, "restored to "+p.DLQ, p.FirstError), result: &p, call: call}, true
	})
}

// answeringRetryDryRun is t, the refusal of pgbus_dlq_retry, answering a
// retry's dry run (answeringDryRun) with what a retry would do now
// (ops.Service.PreviewRetry).
func answeringRetryDryRun(d Deps, t server.ServerTool) server.ServerTool {
	return answeringDryRun(d, t, func(in DLQRetryInput) bool { return in.DryRun }, func(ctx context.Context, in DLQRetryInput) (dryRunAnswer, bool) {
		req, err := in.request()
		if err != nil {
			return dryRunAnswer{}, false
		}
		p, err := d.Ops.PreviewRetry(ctx, req)
		if err != nil {
			return dryRunAnswer{}, false
		}
		said := filterSaid(p.Retried, "retried", p.LimitReached, p.FirstError)
		if len(req.IDs) > 0 {
			said = idsSaid(p.Retried, len(p.Outcomes)+p.OutcomesOmitted, "retried", p.FirstError)
		}
		next := p.Next
		p.Next = []ops.Hint{}
		if call, ok := callIn(next, ops.OpDLQRetry); ok && p.Retried > 0 {
			return dryRunAnswer{said: said, result: &p, call: call}, true
		}
		if clearsDeadline(next) {
			// Its next step is the dry run clearing the deadlines that
			// passed (by filter, the one that gives the expect of the whole
			// set), which is read here as well: the command is the retry
			// it names.
			cleared := req
			cleared.ClearDeadline = true
			c, err := d.Ops.PreviewRetry(ctx, cleared)
			if call, ok := callIn(c.Next, ops.OpDLQRetry); err == nil && ok && c.Retried > 0 {
				then := filterSaid(c.Retried, "retried", c.LimitReached, c.FirstError)
				if len(req.IDs) > 0 {
					then = idsSaid(c.Retried, len(c.Outcomes)+c.OutcomesOmitted, "retried", c.FirstError)
				}
				said += "; with their deadlines cleared, " + then
				return dryRunAnswer{said: said, result: &p, call: call}, true
			}
		}
		if p.Retried > 0 {
			return dryRunAnswer{}, false
		}
		return dryRunAnswer{said: said, result: &p, next: next}, true
	})
}

// clearsDeadline reports whether a step of next is a retry's dry run
// clearing the deadlines that passed.
func clearsDeadline(next []ops.Hint) bool {
	for _, h := range next {
		if h.Op == ops.OpDLQRetry && h.Args["dry_run"] == true && h.Args["clear_deadline"] == true {
			return true
		}
	}
	return false
}

// answeringDiscardDryRun is t, the refusal of pgbus_dlq_discard, answering
// a discard's dry run (answeringDryRun) with what a discard would do now
// (ops.Service.PreviewDiscard).
func answeringDiscardDryRun(d Deps, t server.ServerTool) server.ServerTool {
	return answeringDryRun(d, t, func(in DLQDiscardInput) bool { return in.DryRun }, func(ctx context.Context, in DLQDiscardInput) (dryRunAnswer, bool) {
		req, err := in.request()
		if err != nil {
			return dryRunAnswer{}, false
		}
		p, err := d.Ops.PreviewDiscard(ctx, req)
		if err != nil {
			return dryRunAnswer{}, false
		}
		said := filterSaid(p.Discarded, "discarded", p.LimitReached, p.FirstError)
		if len(req.IDs) > 0 {
			said = idsSaid(p.Discarded, len(p.Outcomes)+p.OutcomesOmitted, "discarded", p.FirstError)
		}
		next := p.Next
		p.Next = []ops.Hint{}
		call, ok := callIn(next, ops.OpDLQDiscard)
		switch {
		case p.Discarded > 0 && ok:
			return dryRunAnswer{said: said, result: &p, call: call}, true
		case p.Discarded > 0:
			return dryRunAnswer{}, false
		}
		return dryRunAnswer{said: said, result: &p, next: next}, true
	})
}

// answeringRunNowDryRun is t, the refusal of pgbus_queue_run_now,
// answering a run-now's dry run (answeringDryRun) with how many messages
// it would make visible now (ops.Service.PreviewRunNow).
func answeringRunNowDryRun(d Deps, t server.ServerTool) server.ServerTool {
	return answeringDryRun(d, t, func(in QueueRunNowInput) bool { return in.DryRun }, func(ctx context.Context, in QueueRunNowInput) (dryRunAnswer, bool) {
		p, err := d.Ops.PreviewRunNow(ctx, in.request())
		call, ok := callIn(p.Next, ops.OpQueueRunNow)
		if err != nil || p.Visible == 0 || !ok {
			return dryRunAnswer{}, false
		}
		which := plural.Count(int(p.Visible), "message", "messages")
		if p.InFlight {
			which += " in flight"
		}
		p.Next = []ops.Hint{}
		return dryRunAnswer{said: fmt.Sprintf("%s of queue %s would be made visible now", which, p.Queue), result: &p, call: call}, true
	})
}
