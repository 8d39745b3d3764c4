package tools

import (
	"context"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// readTools and writeTools make the tools pgbus has: the one list of
// which tools there are and which of them write, that All serves and the
// command line's help names.
var (
	readTools = []func(Deps) server.ServerTool{
		NewHealth, NewQueueStats, NewDLQSummary, NewDLQList, NewDLQShow,
		NewDLQDiscarded, NewQueueMessages, NewWorkers, NewCircuits, NewAudit,
	}
	writeTools = []func(Deps) server.ServerTool{
		NewDLQRetry, NewDLQDiscard, NewDLQRestore, NewDLQPurge, NewQueuePause,
		NewQueueResume, NewQueueRunNow, NewCircuitReset, NewCircuitOpen,
	}
)

// All returns the tools pgbus lists: the read tools, and the write tools
// unless the operations layer is read-only.
func All(d Deps) []server.ServerTool {
	tools := make([]server.ServerTool, 0, len(readTools)+len(writeTools))
	for _, t := range readTools {
		tools = append(tools, t(d))
	}
	if !d.Ops.ReadOnly() {
		for _, t := range writeTools {
			tools = append(tools, t(d))
		}
	}
	return tools
}

// Names returns the names of every tool pgbus has, read-only or not, in
// the order All lists them.
func Names() []string { return slices.Clone(allNames()) }

// WriteNames returns the names of the write tools, which a read-only
// server leaves out, in the order All lists them.
func WriteNames() []string { return slices.Clone(writeNames()) }

// allNames and writeNames build the tools once a process: every command
// of the CLI asks, at every start, whether a tool does what it does, and
// building every tool for each of them made each start three times as
// slow.
var (
	writeNames = sync.OnceValue(func() []string { return names(writeTools) })
	allNames   = sync.OnceValue(func() []string { return append(names(readTools), writeNames()...) })
)

// names builds each tool without a service, only to read its name.
func names(tools []func(Deps) server.ServerTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t(Deps{}).Tool.Name
	}
	return out
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
