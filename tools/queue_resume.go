package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"
)

const queueResumeDescription = `Resumes a paused queue: workers take its messages again, the backlog first.

Use it once the cause that made you pause the queue (pgbus_queue_pause) is fixed. Next: pgbus_queue_stats to watch the backlog drain; pgbus_dlq_retry for the messages that died meanwhile.`

// NewQueueResume returns the pgbus_queue_resume tool.
func NewQueueResume(d Deps) server.ServerTool {
	const name = "pgbus_queue_resume"
	return server.ServerTool{
		Tool: newTool(name, queueResumeDescription, writeAnnotations("Resume a queue", false, true), QueuePauseInput{}, QueuePauseOutput{}),
		Handler: audited(d, name, handler(func(ctx context.Context, in QueuePauseInput) (QueuePauseOutput, error) {
			if in.Queue == "" {
				return QueuePauseOutput{}, fixf("queue is required: pass the queue to resume; pgbus_queue_stats lists them")
			}
			changed, err := d.Admin.Resume(ctx, in.Queue)
			if err != nil {
				return QueuePauseOutput{}, err
			}
			next := "workers take its messages again; watch the backlog with pgbus_queue_stats."
			if !changed {
				next = "the queue was not paused; " + next
			}
			return QueuePauseOutput{Queue: in.Queue, Paused: false, Changed: changed, Next: next}, nil
		})),
	}
}
