package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// QueuePauseInput is the input of pgbus_queue_pause and pgbus_queue_resume.
type QueuePauseInput struct {
	Queue string `json:"queue" jsonschema_description:"Queue name (orders)."`
}

const queuePauseDescription = `Pauses a queue: workers stop taking its messages (those running finish). Messages keep arriving and wait; nothing is lost.

Use it to stop a queue whose messages all fail (a downstream is down, a bad deploy) so they do not burn their attempts and fill the DLQ. Next: fix the cause, then pgbus_queue_resume. pgbus_health reports paused queues.`

func queuePauseTool() mcp.Tool {
	return newTool("pgbus_queue_pause", queuePauseDescription, writeAnnotations("Pause a queue", false, true), QueuePauseInput{}, ops.QueuePaused{})
}

// NewQueuePause returns the pgbus_queue_pause tool.
func NewQueuePause(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: queuePauseTool(),
		Handler: handler(d, func(ctx context.Context, in QueuePauseInput) (ops.QueuePaused, error) {
			return d.Ops.QueuePause(ctx, in.request())
		}),
	}
}

// request is the queue the arguments name.
func (in QueuePauseInput) request() ops.QueueRequest { return ops.QueueRequest{Queue: in.Queue} }
