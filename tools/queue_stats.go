package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// QueueStatsInput is the input of pgbus_queue_stats.
type QueueStatsInput struct {
	Queue        string `json:"queue,omitempty" jsonschema_description:"Queue name (orders). Omit for every queue."`
	NameContains string `json:"name_contains,omitempty" jsonschema_description:"Only the queues whose names contain this, in any case (a tenant's prefix: acme_). Takes no queue."`
}

const queueStatsDescription = `Statistics of one queue or of all: depth split into ready, in flight, waiting for a retry and scheduled; the age of the oldest ready message; DLQ depth; outcomes over the last hour (succeeded, failed, retried, dead-lettered, discarded); throughput; latency percentiles; whether it is paused; and its retry settings. With more queues than fit, the rest are only counted, in omitted; notes say how many of them hold dead messages or a backlog.

Use it to see which queues are backed up or failing. Next: pgbus_dlq_summary (queue) when dlq_depth or dead_lettered is not zero; pgbus_queue_messages (queue, state: retrying) to see messages that are failing but not dead yet; pgbus_workers when ready messages are not being taken.`

// NewQueueStats returns the pgbus_queue_stats tool.
func NewQueueStats(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_queue_stats", queueStatsDescription, readAnnotations("Queue statistics"), QueueStatsInput{}, ops.QueueStatsResult{}),
		Handler: handler(d, func(ctx context.Context, in QueueStatsInput) (ops.QueueStatsResult, error) {
			return d.Ops.QueueStats(ctx, ops.QueueStatsRequest{Queue: in.Queue, NameContains: in.NameContains})
		}),
	}
}
