package tools

import (
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// ErrorMetaKey is the key of a tool error's _meta under which it carries
// what its text says as data: the kind of error (one of ops.Kinds), the
// next steps as tool calls, and how much a bulk call did before it
// stopped, so that a client branches on them without parsing the text.
// Errors carry no structured content, which clients check against the
// tool's output schema.
const ErrorMetaKey = "pgbus/error"

// errorMeta is the value under ErrorMetaKey.
type errorMeta struct {
	Kind string `json:"kind"`
	// Next is never null: [] when there is no next step.
	Next       []nextCall      `json:"next"`
	PartlyDone *partlyDoneMeta `json:"partly_done,omitempty"`
	// DryRun is, in a read-only server's refusal of a dry run (of a
	// retry, discard, restore or run-now), the dry run's result, which it
	// reads, but for its next steps, which are the refusal's.
	DryRun any `json:"dry_run,omitempty"`
}

// nextCall is a next step: a tool to call with its arguments, or, for what
// no tool of this server does, the command an operator can run.
type nextCall struct {
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Command   string          `json:"command,omitempty"`
	Why       string          `json:"why,omitempty"`
}

// partlyDoneMeta is how many messages a bulk retry, discard or purge
// handled before it stopped, which stay handled, and the most it would
// have (0, left out, for a purge).
type partlyDoneMeta struct {
	Done  int64 `json:"done"`
	Limit int64 `json:"limit,omitempty"`
	// Unsure are the messages that may or may not have been handled,
	// counted neither in done nor in the limit of the call again.
	Unsure []ops.DeadID `json:"unsure,omitempty"`
}

// ErrorKind is the kind of the tool error res (one of ops.Kinds, as its
// _meta under ErrorMetaKey says), "" for a result that is no error of
// this package's tools.
func ErrorKind(res *mcp.CallToolResult) string {
	if res == nil || !res.IsError || res.Meta == nil {
		return ""
	}
	if m, ok := res.Meta.AdditionalFields[ErrorMetaKey].(errorMeta); ok {
		return m.Kind
	}
	return ""
}

// withErrorMeta returns res carrying m under ErrorMetaKey.
func withErrorMeta(res *mcp.CallToolResult, m errorMeta) *mcp.CallToolResult {
	if m.Next == nil {
		m.Next = []nextCall{}
	}
	res.Meta = mcp.NewMetaFromMap(map[string]any{ErrorMetaKey: m})
	return res
}

// errorMetaOf is the data of err's error result: its kind as the
// operations layer classes it, the next steps the text renders, named as
// tools, and how much was done when a bulk call stopped partway.
func errorMetaOf(err error, r relay) errorMeta {
	m := errorMeta{Kind: errorKind(err), Next: nextCalls(nextSteps(err), r)}
	if ce := (*callError)(nil); errors.As(err, &ce) {
		for _, h := range ce.operator {
			why, _ := ops.RedactText(h.Why)
			m.Next = append(m.Next, commandCall(r.command(vocab.Command(h)), why))
		}
	}
	if p := (*ops.PartlyDone)(nil); errors.As(err, &p) {
		m.PartlyDone = &partlyDoneMeta{Done: p.Done, Limit: p.Limit, Unsure: p.Unsure}
	}
	return m
}

// errorKind is the kind of err: arguments that could not be read as a
// request (wrong types, unknown fields, values this package checks before
// the request) are a usage error, as a command line that cannot be parsed
// is; everything else is of the kind the operations layer gives it.
func errorKind(err error) string {
	if ce := (*callError)(nil); errors.As(err, &ce) {
		return ops.KindUsage
	}
	return ops.ErrorKind(err)
}

// nextSteps is what to do after err: nothing for arguments that could not
// be read as a request, whose message says how to fix them; otherwise the
// next steps the operations layer gives it.
func nextSteps(err error) []ops.Hint {
	if ce := (*callError)(nil); errors.As(err, &ce) {
		return ce.next
	}
	return ops.NextSteps(err)
}

// nextCalls renders hints as the steps of an error's data, redacted as
// its text is.
func nextCalls(hints []ops.Hint, r relay) []nextCall {
	calls := make([]nextCall, 0, len(hints))
	for _, h := range hints {
		h = r.hint(h)
		why, _ := ops.RedactText(h.Why)
		if h.Op == "cli" {
			command, _ := h.Args["command"].(string)
			calls = append(calls, commandCall(command, why))
			continue
		}
		calls = append(calls, nextCall{Tool: h.Op, Arguments: redactedArgs(h.Args), Why: why})
	}
	return calls
}

// commandCall is the step of running command, for an operator.
func commandCall(command, why string) nextCall {
	command, _ = ops.RedactText(command)
	return nextCall{Command: command, Why: why}
}

// redactedArgs is args as a JSON object, {} when there are none, with the
// secrets in them hidden.
func redactedArgs(args map[string]any) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return json.RawMessage("{}")
	}
	if out, _, ok := ops.RedactJSON(raw); ok {
		return out
	}
	return json.RawMessage("{}")
}

// UnavailableResult is a tool error of kind unavailable saying text, with
// no next step: for a call the server answers before its tool runs, as
// one it has no room to run now.
func UnavailableResult(text string) *mcp.CallToolResult {
	return withErrorMeta(mcp.NewToolResultError(text), errorMeta{Kind: ops.KindUnavailable})
}
