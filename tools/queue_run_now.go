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
	// InFlight takes the messages in flight instead of the retrying ones.
	InFlight bool `json:"in_flight,omitempty" jsonschema_description:"Take the messages in flight instead (read by a worker, not settled): after a restore or failover, whose workers are gone, they would wait out their visibility timeout (up to 24 hours). WARNING: a job a worker still runs is made visible too and runs twice; use it only once the workers that read them are gone. Their attempt counts, as after a crash."`
}

const queueRunNowDescription = `Makes a queue's messages that wait out a retry's backoff (state retrying) visible now, so workers run them at once; attempts still count. in_flight: those in flight instead (see its warning). Others keep their times. dry_run counts them; workers: whether a running worker serves the queue.

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
	return ops.QueueRunNowRequest{Queue: in.Queue, Kind: in.Kind, DryRun: in.DryRun, InFlight: in.InFlight}
}
