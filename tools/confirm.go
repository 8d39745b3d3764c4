package tools

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// confirmSchema is the form a person fills in to confirm: one box, unset
// by default, so that accepting the form without ticking it is a no.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"confirm": map[string]any{"type": "boolean", "title": "Go ahead", "default": false,
			"description": "Tick to let pgbus do what the message says."},
	},
	"required": []string{"confirm"},
}

// confirmInput is the key of the question in a call's input requests, and
// of its answer in the retry's input responses.
const confirmInput = "confirm"

type roundTripKey struct{}

// withRoundTrip keeps the answers and state a retry of protocol 2026-07-28
// carries (multi round-trip requests), for the call to read its person's
// answer from.
func withRoundTrip(ctx context.Context, req mcp.CallToolRequest) context.Context {
	return context.WithValue(ctx, roundTripKey{}, req.Params.MultiRoundTripParams)
}

// askPerson returns how the call reaches the person at the MCP client:
// a Confirmer that asks them through elicitation while the call waits
// (protocol versions with sessions, 2025-11-25 and earlier), or a Deferred
// that asks them by answering the call with the question and takes their
// answer from the call's retry (2026-07-28 and later); neither when the
// client declared no elicitation capability.
func askPerson(ctx context.Context) (ops.Confirmer, *ops.Deferred) {
	if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		return nil, deferred(ctx)
	}
	srv := server.ServerFromContext(ctx)
	session, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if srv == nil || !ok || session.GetClientCapabilities().Elicitation == nil {
		return nil, nil
	}
	if _, ok := session.(server.SessionWithElicitation); !ok {
		return nil, nil
	}
	return func(ctx context.Context, question string) (bool, error) {
		var (
			res *mcp.ElicitationResult
			err error
		)
		if perr := whilePaused(ctx, func() {
			res, err = srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: question, RequestedSchema: confirmSchema}})
		}); perr != nil {
			return false, perr
		}
		if err != nil {
			return false, err
		}
		return accepted(res), nil
	}, nil
}

type pauseKey struct{}

// WithPause returns ctx with pause, through which a tool call waits for
// its person's answer: pause lets go of what the call holds of its server
// (its slot among the calls the server runs at once), runs wait, and
// takes it back, returning an error when it cannot (the call's context
// ended first). A person may take minutes to answer; the calls of others
// run meanwhile.
func WithPause(ctx context.Context, pause func(ctx context.Context, wait func()) error) context.Context {
	return context.WithValue(ctx, pauseKey{}, pause)
}

// whilePaused runs wait through ctx's pause (WithPause), or as it is.
func whilePaused(ctx context.Context, wait func()) error {
	if pause, ok := ctx.Value(pauseKey{}).(func(context.Context, func()) error); ok {
		return pause(ctx, wait)
	}
	wait()
	return nil
}

// deferred is askPerson for a request of protocol 2026-07-28 and later: the
// answer of a retry, which carries one (or only a state); else a first call
// to ask, when the request declares elicitation; else nil.
func deferred(ctx context.Context) *ops.Deferred {
	rt, _ := ctx.Value(roundTripKey{}).(mcp.MultiRoundTripParams)
	if rt.RequestState != "" || len(rt.InputResponses) > 0 {
		return &ops.Deferred{Answered: true, State: rt.RequestState,
			Yes: accepted(server.ElicitationResponse(rt.InputResponses, confirmInput))}
	}
	if info := server.RequestProtocolInfoFromContext(ctx); info == nil || info.ClientCapabilities == nil || info.ClientCapabilities.Elicitation == nil {
		return nil
	}
	return &ops.Deferred{}
}

// accepted reports whether the person accepted the form with its box
// ticked; declining, cancelling or leaving the box unticked is a no.
func accepted(res *mcp.ElicitationResult) bool {
	if res == nil {
		return false
	}
	content, _ := res.Content.(map[string]any)
	return res.Action == mcp.ElicitationResponseActionAccept && content["confirm"] == true
}

// askResult answers a call whose operation needs a person's answer first
// with the question, as an input request of protocol 2026-07-28: the
// client asks its user and makes the call again with the answer and the
// question's state.
func askResult(err error) (*mcp.CallToolResult, bool) {
	var q *ops.Question
	if !errors.As(err, &q) {
		return nil, false
	}
	return server.NewInputRequestBuilder(q.State).
		Elicit(confirmInput, mcp.ElicitationParams{Message: q.Text, RequestedSchema: confirmSchema}).
		ToolResult(), true
}
