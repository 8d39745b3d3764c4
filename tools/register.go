package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// All returns the tools pgbus lists: the read tools, and the write tools
// unless the operations layer is read-only.
func All(d Deps) []server.ServerTool {
	tools := []server.ServerTool{
		NewHealth(d),
		NewQueueStats(d),
		NewDLQSummary(d),
		NewDLQList(d),
		NewDLQShow(d),
		NewDLQDiscarded(d),
		NewQueueMessages(d),
		NewWorkers(d),
		NewCircuits(d),
		NewAudit(d),
	}
	if !d.Ops.ReadOnly() {
		tools = append(tools,
			NewDLQRetry(d),
			NewDLQDiscard(d),
			NewDLQRestore(d),
			NewDLQPurge(d),
			NewQueuePause(d),
			NewQueueResume(d),
			NewQueueRunNow(d),
			NewCircuitReset(d),
			NewCircuitOpen(d),
		)
	}
	return tools
}

// Register adds the tools of All(d) to s. hooks are those s was built with
// (server.WithHooks), or nil. On a read-only operations layer with hooks,
// it also adds Refusals(d), so that an agent that calls a write tool
// anyway learns what to tell its user instead of meeting an unknown tool,
// and keeps tools/list to the tools of All(d) with an after-list hook.
// Without hooks the refusals could not be hidden, so they are not added
// and the write tools stay unknown.
func Register(s *server.MCPServer, d Deps, hooks *server.Hooks) {
	s.AddTools(All(d)...)
	if d.Ops.ReadOnly() && hooks != nil {
		s.AddTools(Refusals(d)...)
		hooks.AddAfterListTools(listReadOnly)
	}
}

// listReadOnly keeps a tools/list answer to the tools annotated read-only,
// which on a read-only server are those of All. The answer gets a slice of
// its own: the one it holds may be shared with the server.
func listReadOnly(_ context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	if res == nil {
		return
	}
	listed := make([]mcp.Tool, 0, len(res.Tools))
	for _, t := range res.Tools {
		if ro := t.Annotations.ReadOnlyHint; ro != nil && *ro {
			listed = append(listed, t)
		}
	}
	res.Tools = listed
}
