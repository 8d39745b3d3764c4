package tools

import (
	"context"

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

// askPerson returns a Confirmer that asks the person at the MCP client
// through elicitation, or nil when the call cannot reach one: the client
// declared no elicitation capability, or its protocol version (2026-07-28
// and later) has no server-initiated requests.
func askPerson(ctx context.Context) ops.Confirmer {
	srv := server.ServerFromContext(ctx)
	session, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if srv == nil || !ok || session.GetClientCapabilities().Elicitation == nil || mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		return nil
	}
	if _, ok := session.(server.SessionWithElicitation); !ok {
		return nil
	}
	return func(ctx context.Context, question string) (bool, error) {
		res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: question, RequestedSchema: confirmSchema}})
		if err != nil {
			return false, err
		}
		content, _ := res.Content.(map[string]any)
		return res.Action == mcp.ElicitationResponseActionAccept && content["confirm"] == true, nil
	}
}
