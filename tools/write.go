package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"
)

// clientName names the MCP client of the call's session, as it introduced
// itself (name/version), or "unknown", for the audit log.
func clientName(ctx context.Context) string {
	withInfo, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return "unknown"
	}
	info := withInfo.GetClientInfo()
	name := info.Name
	if name == "" {
		return "unknown"
	}
	if info.Version != "" {
		name += "/" + info.Version
	}
	if r := []rune(name); len(r) > 200 {
		name = string(r[:200])
	}
	return name
}
