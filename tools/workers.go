package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// WorkersInput is the input of pgbus_workers: it takes no arguments.
type WorkersInput struct{}

const workersDescription = `Worker processes that ran in the last 24 hours: host, pid, queues, concurrency, start time, last heartbeat, and status (running, stale = crashed or hung, stopped). On a database the Ruby gem pgbus also uses, its processes (from its pgbus_processes table, read only) are listed too, with system ruby_pgbus and their kind.

Use it when messages are ready but not being processed, or when pgbus_health reports no_workers or stale_workers. A stale worker's in-flight messages come back after their visibility timeout; repeated crashes dead-letter them (max_retries_exceeded, see pgbus_dlq_summary).`

// NewWorkers returns the pgbus_workers tool.
func NewWorkers(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_workers", workersDescription, readAnnotations("Worker processes"), WorkersInput{}, ops.Workers{}),
		Handler: handler(d, func(ctx context.Context, _ WorkersInput) (ops.Workers, error) {
			return d.Ops.Workers(ctx, ops.WorkersRequest{})
		}),
	}
}
