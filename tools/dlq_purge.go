package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// DLQPurgeInput is the input of pgbus_dlq_purge.
type DLQPurgeInput struct {
	Queue     string `json:"queue,omitempty" jsonschema_description:"Queue (orders) or DLQ (orders_dlq) whose archived dead messages to purge. Omit for every DLQ."`
	OlderThan string `json:"older_than" jsonschema_description:"Purge only messages archived longer ago than this age: a duration such as 72h, 30m or 7d; 0s purges every archived dead message."`
	Confirm   bool   `json:"confirm,omitempty" jsonschema_description:"Required when the client cannot ask its user (no elicitation): true, as purging deletes for good."`
	DryRun    bool   `json:"dry_run,omitempty" jsonschema_description:"Count what would be purged, and delete nothing: no confirmation needed."`
}

const dlqPurgeDescription = `Deletes for good the archived dead messages of a DLQ older than an age, with their failure history: those pgbus_dlq_discard moved to its archive, and the originals kept there when pgbus_dlq_retry retried a message with a corrected payload. Messages still in a DLQ are not touched. This cannot be undone.

Check first what would go: dry_run: true counts it, pgbus_dlq_discarded lists a queue's archive (pgbus_audit: who discarded what, when). Then call with queue (optional) and older_than (e.g. 72h, 7d; 0s for all). The user is asked to confirm when the client supports elicitation (declined: nothing is purged, declined: true); otherwise pass confirm: true.`

func dlqPurgeTool() mcp.Tool {
	return newTool("pgbus_dlq_purge", dlqPurgeDescription, writeAnnotations("Purge archived dead messages", true, false), DLQPurgeInput{}, ops.DLQPurge{})
}

// NewDLQPurge returns the pgbus_dlq_purge tool.
func NewDLQPurge(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: dlqPurgeTool(),
		Handler: handler(d, func(ctx context.Context, in DLQPurgeInput) (ops.DLQPurge, error) {
			req, err := in.request()
			if err != nil {
				return ops.DLQPurge{}, err
			}
			req.Progress = progressReporter(ctx)
			req.Ask, req.Deferred = askPerson(ctx)
			return d.Ops.DLQPurge(ctx, req)
		}),
	}
}

// request is the purge the arguments ask for.
func (in DLQPurgeInput) request() (ops.DLQPurgeRequest, error) {
	if in.OlderThan == "" {
		return ops.DLQPurgeRequest{}, fixf("older_than is required: pass an age such as 72h or 7d (0s purges every archived dead message)")
	}
	age, err := ops.ParseAge(in.OlderThan)
	if err != nil {
		return ops.DLQPurgeRequest{}, fixf("older_than %q is not an age; pass a duration such as 72h, 30m or 7d (0s for all)", shorten(in.OlderThan))
	}
	return ops.DLQPurgeRequest{Queue: in.Queue, OlderThan: age, Confirm: in.Confirm, DryRun: in.DryRun}, nil
}
