package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/engine"
)

// WorkersInput is the input of pgbus_workers: it takes no arguments.
type WorkersInput struct{}

// WorkersOutput is the output of pgbus_workers.
type WorkersOutput struct {
	Workers []engine.WorkerStatus `json:"workers" jsonschema_description:"Worker processes seen in the last 24 hours, newest first."`
	Running int                   `json:"running" jsonschema_description:"Processes heartbeating now."`
	Stale   int                   `json:"stale" jsonschema_description:"Processes whose heartbeat stopped without a clean shutdown: crashed or hung."`
	Stopped int                   `json:"stopped" jsonschema_description:"Processes that shut down cleanly."`
}

const workersDescription = `Worker processes that ran in the last 24 hours: host, pid, queues, concurrency, start time, last heartbeat, and status (running, stale = crashed or hung, stopped).

Use it when messages are ready but not being processed, or when pgbus_health reports no_running_workers or stale_workers. A stale worker's in-flight messages come back after their visibility timeout; repeated crashes dead-letter them with reason max_retries_exceeded (see pgbus_dlq_summary).`

// NewWorkers returns the pgbus_workers tool.
func NewWorkers(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_workers", workersDescription, readAnnotations("Worker processes"), WorkersInput{}, WorkersOutput{}),
		Handler: handler(func(ctx context.Context, _ WorkersInput) (WorkersOutput, error) {
			ws, err := d.Admin.Workers(ctx)
			out := WorkersOutput{Workers: ws}
			for _, w := range ws {
				switch w.Status {
				case engine.WorkerRunning:
					out.Running++
				case engine.WorkerStale:
					out.Stale++
				case engine.WorkerStopped:
					out.Stopped++
				}
			}
			return out, err
		}),
	}
}
