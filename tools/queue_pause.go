package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"
)

// QueuePauseInput is the input of pgbus_queue_pause and pgbus_queue_resume.
type QueuePauseInput struct {
	Queue string `json:"queue" jsonschema_description:"Queue name (orders)."`
}

// QueuePauseOutput is the output of pgbus_queue_pause and
// pgbus_queue_resume.
type QueuePauseOutput struct {
	Queue   string `json:"queue"`
	Paused  bool   `json:"paused" jsonschema_description:"Whether the queue is paused now."`
	Changed bool   `json:"changed" jsonschema_description:"False when the queue already was in that state."`
	Next    string `json:"next" jsonschema_description:"What to do next."`
}

const queuePauseDescription = `Pauses a queue: workers stop taking its messages (those running finish). Messages keep arriving and wait; nothing is lost.

Use it to stop a queue whose messages all fail (a downstream is down, a bad deploy) so they do not burn their attempts and fill the DLQ. Next: fix the cause, then pgbus_queue_resume. pgbus_health reports paused queues.`

// NewQueuePause returns the pgbus_queue_pause tool.
func NewQueuePause(d Deps) server.ServerTool {
	const name = "pgbus_queue_pause"
	return server.ServerTool{
		Tool: newTool(name, queuePauseDescription, writeAnnotations("Pause a queue", false, true), QueuePauseInput{}, QueuePauseOutput{}),
		Handler: audited(d, name, handler(func(ctx context.Context, in QueuePauseInput) (QueuePauseOutput, error) {
			if in.Queue == "" {
				return QueuePauseOutput{}, fixf("queue is required: pass the queue to pause; pgbus_queue_stats lists them")
			}
			changed, err := d.Admin.Pause(ctx, in.Queue)
			if err != nil {
				return QueuePauseOutput{}, err
			}
			next := "workers no longer take its messages; resume it with pgbus_queue_resume when the cause is fixed."
			if !changed {
				next = "the queue was already paused; " + next
			}
			return QueuePauseOutput{Queue: in.Queue, Paused: true, Changed: changed, Next: next}, nil
		})),
	}
}
