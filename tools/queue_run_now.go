package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// QueueRunNowInput is the input of pgbus_queue_run_now.
type QueueRunNowInput struct {
	Queue  string `json:"queue" jsonschema_description:"Queue name (orders), or one priority level of it (orders_p1); not a DLQ."`
	Kind   string `json:"kind,omitempty" jsonschema_description:"Only the messages of this job kind, as pgbus_queue_messages shows it: when the fix was to one kind's downstream. Others keep waiting."`
	DryRun bool   `json:"dry_run,omitempty" jsonschema_description:"Count the messages that would be made visible; change nothing."`
}

const queueRunNowDescription = `Makes the messages of a queue that failed and wait out their retry backoff (state retrying) visible now, so workers run them at once; their attempts still count. Messages in flight, waiting or scheduled keep their times. dry_run counts them; workers says whether a running worker serves the queue.

Use it once what failed them is fixed. Next: pgbus_queue_messages to watch them run.`

func queueRunNowTool() mcp.Tool {
	return newTool("pgbus_queue_run_now", queueRunNowDescription, writeAnnotations("Run a queue's retrying messages now", false, true), QueueRunNowInput{}, ops.QueueRunNow{})
}

// NewQueueRunNow returns the pgbus_queue_run_now tool.
func NewQueueRunNow(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: queueRunNowTool(),
		Handler: handler(d, func(ctx context.Context, in QueueRunNowInput) (ops.QueueRunNow, error) {
			req := in.request()
			req.Progress = progressReporter(ctx)
			return d.Ops.QueueRunNow(ctx, req)
		}),
	}
}

// request is the run-now the arguments ask for.
func (in QueueRunNowInput) request() ops.QueueRunNowRequest {
	return ops.QueueRunNowRequest{Queue: in.Queue, Kind: in.Kind, DryRun: in.DryRun}
}
