package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"
)

// clientName names the MCP client of the call's session for the audit log:
// "mcp:" and the name/version it introduced itself with, so that a client
// calling itself "cli" is never taken for a person at the command line.
// A client that gave no name is "mcp:unknown".
func clientName(ctx context.Context) string {
	name := "unknown"
	if withInfo, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		info := withInfo.GetClientInfo()
		if info.Name != "" {
			name = info.Name
			if info.Version != "" {
				name += "/" + info.Version
			}
		}
	}
	name = "mcp:" + name
	if r := []rune(name); len(r) > 200 {
		name = string(r[:200])
	}
	return name
}
