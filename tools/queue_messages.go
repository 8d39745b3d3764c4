package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// QueueMessagesInput is the input of pgbus_queue_messages.
type QueueMessagesInput struct {
	Queue          string `json:"queue" jsonschema_description:"Queue name (orders)."`
	State          string `json:"state,omitempty" jsonschema:"enum=waiting,enum=in_flight,enum=retrying,enum=scheduled" jsonschema_description:"Only messages in this state: waiting (ready to run), in_flight (held by a worker), retrying (failed, waiting for the next attempt), scheduled (delayed, snoozed, or given back by a stopped worker while its handler ignored the stop: it runs again after the visibility timeout; one whose handler returned is waiting at once). Omit for all."`
	Cursor         string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same queue and state. Omit for the first page."`
	Limit          *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Messages per page: 1 to 100, default 25."`
	IncludePayload bool   `json:"include_payload,omitempty" jsonschema_description:"Return payloads too (up to 4 KB each). Shown only when the server runs with --allow-payloads; secrets are redacted."`
	FullHistory    bool   `json:"full_history,omitempty" jsonschema_description:"List each failure as recorded; by default identical failures in a row are one entry with repeated. Either way only a message's newest failures are listed (failure_count has the total)."`
}

const queueMessagesDescription = `Lists the live messages of a queue (not yet dead), oldest first (with priority levels, level 0 first, each message with its level), with their state (waiting, in_flight, retrying, scheduled), attempts so far and their latest failures.

Use it to see what is failing before it reaches the DLQ (state: retrying), what a stalled queue is holding (waiting), or what workers hold now (in_flight). Pages: pass next_cursor back as cursor; limit 1 to 100, default 25. Payloads only with include_payload and a server started with --allow-payloads. Next: pgbus_workers if nothing is in flight while messages wait; pgbus_queue_pause to stop a queue whose messages all fail.`

// NewQueueMessages returns the pgbus_queue_messages tool.
func NewQueueMessages(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_queue_messages", queueMessagesDescription, readAnnotations("Live messages of a queue"), QueueMessagesInput{}, ops.LiveMessages{}),
		Handler: handler(d, func(ctx context.Context, in QueueMessagesInput) (ops.LiveMessages, error) {
			limit, err := pageLimit(in.Limit, ops.OpQueueMessages)
			if err != nil {
				return ops.LiveMessages{}, err
			}
			return d.Ops.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: in.Queue, State: in.State, Cursor: in.Cursor, Limit: limit, IncludePayload: in.IncludePayload, FullHistory: in.FullHistory})
		}),
	}
}
