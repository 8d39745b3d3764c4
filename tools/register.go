package tools

import (
	"github.com/mark3labs/mcp-go/server"
)

// All returns pgbus's tools: the read tools, and the write tools unless
// the operations layer is read-only. A read-only server does not know the write tools at all, so
// they are neither listed nor callable.
func All(d Deps) []server.ServerTool {
	tools := []server.ServerTool{
		NewHealth(d),
		NewQueueStats(d),
		NewDLQSummary(d),
		NewDLQList(d),
		NewDLQShow(d),
		NewQueueMessages(d),
		NewWorkers(d),
		NewCircuits(d),
		NewAudit(d),
	}
	if !d.Ops.ReadOnly() {
		tools = append(tools,
			NewDLQRetry(d),
			NewDLQDiscard(d),
			NewDLQPurge(d),
			NewQueuePause(d),
			NewQueueResume(d),
			NewCircuitReset(d),
		)
	}
	return tools
}

// Register adds the tools of All(d) to s.
func Register(s *server.MCPServer, d Deps) {
	s.AddTools(All(d)...)
}
