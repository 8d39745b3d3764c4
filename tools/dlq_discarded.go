package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// DLQDiscardedInput is the input of pgbus_dlq_discarded.
type DLQDiscardedInput struct {
	Queue      string `json:"queue" jsonschema_description:"The queue (or its DLQ, X_dlq) whose discarded messages to list. Required."`
	Kind       string `json:"kind,omitempty" jsonschema_description:"Only messages of this job kind."`
	ErrorClass string `json:"error_class,omitempty" jsonschema_description:"Only messages whose last error has this class, exactly."`
	Since      string `json:"since,omitempty" jsonschema_description:"Only messages discarded at or after: RFC 3339, a date (2026-11-29, midnight UTC), or an age (30m, 2h, 7d)."`
	Until      string `json:"until,omitempty" jsonschema_description:"Only messages discarded before: RFC 3339, a date (midnight UTC), or an age."`
	Limit      *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Messages to list, most recently discarded first: 1 to 100, default 25."`
	Cursor     string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same queue and filters. Omit for the first page."`
	ByHandler  bool   `json:"by_handler,omitempty" jsonschema_description:"List instead the messages a handler's rule discarded from the queue itself (engine.Discard, on_status, on_exit): never dead-lettered, kept in the queue's archive, restorable by no restore; error_class matches the error that discarded them."`
}

const dlqDiscardedDescription = `Lists the discarded messages of a queue's DLQ (its archive), newest discard first, no payloads; restorable is false for originals of a corrected-payload retry. Filters: kind, error_class, since/until (discard time). Next: pgbus_dlq_restore.`

// NewDLQDiscarded returns the pgbus_dlq_discarded tool.
func NewDLQDiscarded(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_dlq_discarded", dlqDiscardedDescription, readAnnotations("List discarded messages"), DLQDiscardedInput{}, ops.DLQDiscarded{}),
		Handler: handler(d, func(ctx context.Context, in DLQDiscardedInput) (ops.DLQDiscarded, error) {
			limit, err := pageLimit(in.Limit, ops.OpDLQDiscarded)
			if err != nil {
				return ops.DLQDiscarded{}, err
			}
			f := ops.DeadFilter{Queue: in.Queue, Kind: in.Kind, ErrorClass: in.ErrorClass, Since: in.Since, Until: in.Until}
			return d.Ops.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: f, Limit: limit, Cursor: in.Cursor, ByHandler: in.ByHandler})
		}),
	}
}
