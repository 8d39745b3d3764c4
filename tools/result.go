package tools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/hiddenchar"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// handler turns a typed function into an MCP tool handler: it decodes the
// arguments strictly, runs fn, and answers either the output as structured
// content plus its JSON text, or a tool error (isError) whose text says
// what to do. It never answers a protocol error, so a bad call leaves the
// session serving.
func handler[In, Out any](d Deps, fn func(ctx context.Context, in In) (Out, error)) server.ToolHandlerFunc {
	r := d.relay()
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in In
		if err := decodeArgs(req, &in); err != nil {
			return errorResult(err, r), nil
		}
		ctx = ops.WithClient(withRoundTrip(withProgressToken(ctx, req), req), clientName(ctx))
		out, err := fn(ctx, in)
		if res, ok := askResult(err); ok {
			return res, nil
		}
		if err != nil {
			return errorResult(err, r), nil
		}
		return structuredResult(&out, r), nil
	}
}

// structuredResult answers out (a pointer) as structured content with a
// JSON copy in the text content, for clients that read only text.
func structuredResult(out any, r relay) *mcp.CallToolResult {
	fillNil(reflect.ValueOf(out))
	r.nameHints(reflect.ValueOf(out))
	WordNotes(out)
	text, err := JSONText(out)
	if err != nil {
		return errorResult(err, r)
	}
	return mcp.NewToolResultStructured(out, text)
}

// JSONText is v's JSON as the text of a result or resource: <, > and &
// as they are, not as \u003c escapes, which an agent reads as six
// characters each (error patterns hold <n> and <str>); the characters
// that reorder or hide text (hiddenchar), as \u escapes: a dead
// message's error or payload holding a right-to-left override, quoted by
// an agent to a person, would read otherwise than it is written. The
// escapes keep the values: a JSON reader gets the same strings, as the
// structured content has them (data for a program, not text to read).
func JSONText(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return escapeHidden(strings.TrimSuffix(b.String(), "\n")), nil
}

// escapeHidden is s with each hidden character (hiddenchar.Is) written as
// a \u escape, which JSON reads as the character: in JSON text, they can
// only stand in strings.
func escapeHidden(s string) string { return hiddenchar.Escape(s) }

// errorResult answers err as a tool error. Errors the caller can fix (bad
// arguments, unknown queues or messages) pass their message, which says
// what to do; other errors say the server could not finish. Either may
// quote what a database or a downstream said, so its secrets are hidden
// as in every other output. Its _meta says the same as data
// (ErrorMetaKey).
func errorResult(err error, r relay) *mcp.CallToolResult {
	text, _ := ops.RedactText(errorText(err, r))
	text = escapeHidden(text)
	return withErrorMeta(mcp.NewToolResultError(text), errorMetaOf(err, r))
}

func errorText(err error, r relay) string {
	var ce *callError
	var oe *ops.Error
	var pd *ops.PartlyDone
	next := nextSteps(err)
	switch {
	case errors.As(err, &ce):
		return ce.msg + operatorText(ce.operator, r)
	case errors.As(err, &oe):
		return oe.Msg + hintText(next, r)
	case errors.As(err, &pd):
		// Part of the work is done and stays done: say how much, and
		// that the same call does the rest.
		why := "pgbus could not finish the call (" + pd.Err.Error() + ")"
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			why = "the call was cancelled or timed out before it finished"
		}
		if pd.Again.Op == "" {
			return why + "; it " + pd.Stopped() + hintText(next, r)
		}
		again := "the same call again"
		var with []string
		if left := pd.Left(); left > 0 {
			with = append(with, `"limit": `+strconv.FormatInt(left, 10))
		}
		if pd.Until != "" {
			// The rest of the same messages, not those that died since.
			with = append(with, `"until": "`+pd.Until+`"`)
		}
		if len(with) > 0 {
			again += " with " + strings.Join(with, " and ")
		}
		return why + "; it " + pd.Stopped() + ": " + again + " " + pd.Rest() + hintText(next, r)
	case errors.Is(err, ops.ErrInvalid), errors.Is(err, ops.ErrNotFound):
		return err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return cutOffText(next, r)
	}
	then := ": try again later"
	if len(next) > 0 {
		then = ": check " + toolCalls(next, r) + " and try again later"
	}
	return "pgbus could not complete the call: " + err.Error() + ". This is a server-side problem (is the database reachable?), not a problem with the arguments" + then
}

// cutOffText is the text of a call cancelled or out of time: its next
// steps, the lists that show what a write did, are to check before
// calling again; a call without them (a read) has nothing to check.
func cutOffText(next []ops.Hint, r relay) string {
	if len(next) == 0 {
		return "the call was cancelled or timed out before it finished: try it again"
	}
	return "the call was cancelled or timed out before it finished; a write may have been partly done: check with " + toolCalls(next, r) + " before trying again"
}

// operatorText renders steps for an operator as the commands they run,
// for an error's text.
func operatorText(hints []ops.Hint, r relay) string {
	if len(hints) == 0 {
		return ""
	}
	commands := make([]string, len(hints))
	for i, h := range hints {
		commands[i] = r.command(vocab.Command(h))
	}
	return ": " + strings.Join(commands, " or ")
}

// hintText renders next steps as tool calls, for an error's text.
func hintText(hints []ops.Hint, r relay) string {
	if len(hints) == 0 {
		return ""
	}
	return ": see " + toolCalls(hints, r)
}

// toolCalls names hints as tool calls, one or another.
func toolCalls(hints []ops.Hint, r relay) string {
	calls := make([]string, len(hints))
	for i, h := range hints {
		calls[i] = r.call(h)
	}
	return strings.Join(calls, " or ")
}

// NameHints rewrites the operations named by the hints reachable from v
// into the tools of d's server that do them; an operation no tool does,
// or whose tool a read-only server leaves out, becomes the command for an
// operator to run (op "cli", args.command).
func NameHints(v reflect.Value, d Deps) { d.relay().nameHints(v) }

func (r relay) nameHints(v reflect.Value) {
	ops.RewriteHints(v, r.hint)
}

func (r relay) hint(h ops.Hint) ops.Hint {
	if name, ok := vocab.ToolOn(h.Op, r.readOnly); ok {
		h.Op = name
		return h
	}
	why := " (no tool does this: ask an operator to run the command)"
	if _, ok := vocab.Tool(h.Op); ok {
		why = " (this server is read-only: ask an operator to run the command)"
	}
	return ops.Hint{Op: "cli", Args: map[string]any{"command": r.command(vocab.Command(h))}, Why: h.Why + why}
}

// fillNil replaces nil slices and maps reachable from v with empty ones, so
// that the JSON has [] and {} where the output schema says array and object,
// never null. json.RawMessage is left alone: its schema accepts null.
func fillNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fillNil(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillNil(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type() == rawMessageType {
			return
		}
		if v.IsNil() {
			if v.CanSet() {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := range v.Len() {
			fillNil(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() && v.CanSet() {
			v.Set(reflect.MakeMap(v.Type()))
		}
	}
}

// WordNotes words the asks of the result out points to (ops.WordNotes) as
// this server's tools take them: by their arguments.
func WordNotes(out any) { ops.WordNotes(out, vocab.ToolNote) }
