package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// DLQDiscardInput is the input of pgbus_dlq_discard.
type DLQDiscardInput struct {
	IDs []int64 `json:"ids,omitempty" jsonschema:"minItems=1,maxItems=100" jsonschema_description:"Dead message ids to discard (msg_id in pgbus_dlq_list), at most 100. With ids, queue may name their DLQ; other filters are not allowed."`
	DeadFilter
	Limit   *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"Required with filters: the most messages to discard, oldest first (1 to 1000). Not used with ids."`
	DryRun  bool   `json:"dry_run,omitempty" jsonschema_description:"Report what would be discarded, without moving anything; by filter it also returns expect."`
	Expect  string `json:"expect,omitempty" jsonschema_description:"With filters: the expect of the dry run, or the ids it listed separated by commas (with queue). The call then discards exactly that set or nothing."`
	Confirm bool   `json:"confirm,omitempty" jsonschema_description:"Required with filters when the client cannot ask its user (no elicitation): true after checking the dry run."`
}

const dlqDiscardDescription = `Discards dead messages to their DLQ's archive, where pgbus_dlq_restore brings them back until pgbus_dlq_purge or the dead retention deletes them. Nothing runs again. By ids, outcomes has one entry per id: discarded, not_found, ambiguous (pass queue) or failed.

Use it for messages that will never succeed (bad input, non_retryable_error, unknown kinds) after reading one with pgbus_dlq_show. Either ids (at most 100; add queue when an id is in several DLQs) or the filters of pgbus_dlq_list with a required limit (1 to 1000, oldest first).

By filter: call with dry_run: true first; it lists what would go and returns expect. Then call again with that expect: if what the filter selects changed meanwhile, the call is refused and nothing moves. The user is asked to confirm when the client supports elicitation (declined: nothing moves, declined: true); otherwise pass confirm: true. Next: pgbus_dlq_summary to see what is left.`

func dlqDiscardTool() mcp.Tool {
	return newTool("pgbus_dlq_discard", dlqDiscardDescription, writeAnnotations("Discard dead messages", true, false), DLQDiscardInput{}, ops.DLQDiscard{})
}

// NewDLQDiscard returns the pgbus_dlq_discard tool.
func NewDLQDiscard(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: dlqDiscardTool(),
		Handler: handler(d, func(ctx context.Context, in DLQDiscardInput) (ops.DLQDiscard, error) {
			req, err := in.request()
			if err != nil {
				return ops.DLQDiscard{}, err
			}
			req.Progress = progressReporter(ctx)
			req.Ask, req.Deferred = askPerson(ctx)
			return d.Ops.DLQDiscard(ctx, req)
		}),
	}
}

// request is the discard the arguments ask for.
func (in DLQDiscardInput) request() (ops.DLQDiscardRequest, error) {
	req := ops.DLQDiscardRequest{IDs: in.IDs, Filter: in.ops(), DryRun: in.DryRun, Expect: in.Expect, Confirm: in.Confirm}
	if err := checkIDsGiven(in.IDs, in.DeadFilter, "discard"); err != nil {
		return ops.DLQDiscardRequest{}, err
	}
	if len(in.IDs) == 0 {
		limit, err := bulkLimit(in.DeadFilter, in.Limit, "discard")
		if err != nil {
			return ops.DLQDiscardRequest{}, err
		}
		req.Limit = limit
	} else if in.Limit != nil {
		req.Limit = *in.Limit // rejected with ids
	}
	return req, nil
}
