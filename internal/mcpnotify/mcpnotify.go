// Package mcpnotify sends a tool call's progress notifications and counts
// them per session, so that the HTTP transport can hold the call's result
// until every one of them is recorded: mcp-go may hand a notification to
// the session's listening stream, which records it later than the call's
// own stream records the result.
package mcpnotify

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/server"
)

// MethodProgress is the method of a progress notification.
const MethodProgress = "notifications/progress"

var sent sync.Map // session id -> *atomic.Int64

// Progress sends a progress notification to the client of the call in ctx
// and counts it for the call's session.
func Progress(ctx context.Context, params map[string]any) error {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	if err := srv.SendNotificationToClient(ctx, MethodProgress, params); err != nil {
		return err
	}
	if s := server.ClientSessionFromContext(ctx); s != nil {
		counter(s.SessionID()).Add(1)
	}
	return nil
}

// Sent is how many progress notifications calls of sessionID have sent.
func Sent(sessionID string) int64 {
	if c, ok := sent.Load(sessionID); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// Forget drops the count of a session that ended.
func Forget(sessionID string) { sent.Delete(sessionID) }

func counter(sessionID string) *atomic.Int64 {
	c, _ := sent.LoadOrStore(sessionID, new(atomic.Int64))
	return c.(*atomic.Int64)
}
