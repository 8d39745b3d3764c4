package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// DLQRestoreInput is the input of pgbus_dlq_restore.
type DLQRestoreInput struct {
	Queue  string  `json:"queue" jsonschema_description:"The queue (or its DLQ, X_dlq) whose DLQ the messages were discarded from. Required: ids are per queue."`
	IDs    []int64 `json:"ids" jsonschema:"minItems=1,maxItems=100" jsonschema_description:"Ids of discarded messages to restore (msg_id in pgbus_dlq_discarded), at most 100."`
	DryRun bool    `json:"dry_run,omitempty" jsonschema_description:"Report what would be restored, without moving anything."`
}

const dlqRestoreDescription = `Restores discarded messages by id from the DLQ's archive to the DLQ in one transaction, ids and history kept: undoes pgbus_dlq_discard until purged or pruned by dead retention. Outcomes: restored, not_found (purged, pruned, restored, never discarded), refused (a corrected-payload retry's original). dry_run first.`

func dlqRestoreTool() mcp.Tool {
	return newTool("pgbus_dlq_restore", dlqRestoreDescription, writeAnnotations("Restore discarded messages", false, true), DLQRestoreInput{}, ops.DLQRestore{})
}

// NewDLQRestore returns the pgbus_dlq_restore tool.
func NewDLQRestore(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: dlqRestoreTool(),
		Handler: handler(d, func(ctx context.Context, in DLQRestoreInput) (ops.DLQRestore, error) {
			return d.Ops.DLQRestore(ctx, in.request())
		}),
	}
}

// request is the restore the arguments ask for.
func (in DLQRestoreInput) request() ops.DLQRestoreRequest {
	return ops.DLQRestoreRequest{Queue: in.Queue, IDs: in.IDs, DryRun: in.DryRun}
}
