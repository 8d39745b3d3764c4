package tools

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/mcpnotify"
)

type progressKey struct{}

// withProgressToken keeps the call's progress token, if the client sent
// one, for long operations to report progress against.
func withProgressToken(ctx context.Context, req mcp.CallToolRequest) context.Context {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, req.Params.Meta.ProgressToken)
}

// progressReporter returns a function that sends MCP progress notifications
// for the call in ctx, or nil when the client asked for none.
func progressReporter(ctx context.Context) func(done, total int) {
	token := ctx.Value(progressKey{})
	srv := server.ServerFromContext(ctx)
	if token == nil || srv == nil {
		return nil
	}
	// MCP requires progress to increase with each notification; a batch
	// that moved nothing repeats the count, and is not sent.
	var mu sync.Mutex
	last := -1
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if done <= last {
			return
		}
		last = done
		params := map[string]any{"progressToken": token, "progress": done}
		if total > 0 { // 0: not counted
			params["total"] = total
		}
		_ = mcpnotify.Progress(ctx, params)
	}
}
