package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

const queueResumeDescription = `Resumes a paused queue: workers take its messages again, the backlog first. The result says whether a running worker serves the queue (workers); when none does, nothing runs until one is started, and next says so.

Use it once the cause that made you pause the queue (pgbus_queue_pause) is fixed. Next: pgbus_queue_stats to watch the backlog drain; pgbus_dlq_retry for the messages that died meanwhile.`

func queueResumeTool() mcp.Tool {
	return newTool("pgbus_queue_resume", queueResumeDescription, writeAnnotations("Resume a queue", false, true), QueuePauseInput{}, ops.QueuePaused{})
}

// NewQueueResume returns the pgbus_queue_resume tool.
func NewQueueResume(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: queueResumeTool(),
		Handler: handler(d, func(ctx context.Context, in QueuePauseInput) (ops.QueuePaused, error) {
			return d.Ops.QueueResume(ctx, in.request())
		}),
	}
}
