package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// DLQListInput is the input of pgbus_dlq_list.
type DLQListInput struct {
	DeadFilter
	MinPayloadBytes int64  `json:"min_payload_bytes,omitempty" jsonschema:"minimum=0" jsonschema_description:"Only messages whose payload_bytes is at least this: to find oversized poison payloads."`
	Order           string `json:"order,omitempty" jsonschema:"enum=newest,enum=largest" jsonschema_description:"newest (default): newest dead-lettered first; largest: largest payload_bytes first. Both this and min_payload_bytes read every message the filters select."`
	Cursor          string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same filters and order. Omit for the first page."`
	Limit           *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Messages per page: 1 to 100, default 25."`
}

const dlqListDescription = `Lists dead messages, newest first, one page at a time: DLQ, id, kind, reason, source queue, attempts, error class and error message, dead-letter time and payload size. No payloads or backtraces; error messages cut to 300 characters, secrets redacted.

Use it to see the individual messages of a group from pgbus_dlq_summary, with the same filters. Pages: pass next_cursor back as cursor with the same filters; limit 1 to 100, default 25. Next: pgbus_dlq_show (queue: the item's dlq, msg_id) for one message in full; pgbus_dlq_retry or pgbus_dlq_discard with the ids or the same filters.`

// NewDLQList returns the pgbus_dlq_list tool.
func NewDLQList(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_dlq_list", dlqListDescription, readAnnotations("List dead messages"), DLQListInput{}, ops.DLQList{}),
		Handler: handler(d, func(ctx context.Context, in DLQListInput) (ops.DLQList, error) {
			limit, err := pageLimit(in.Limit, ops.OpDLQList)
			if err != nil {
				return ops.DLQList{}, err
			}
			return d.Ops.DLQList(ctx, ops.DLQListRequest{Filter: in.ops(), MinPayloadBytes: in.MinPayloadBytes, Order: in.Order, Cursor: in.Cursor, Limit: limit})
		}),
	}
}
