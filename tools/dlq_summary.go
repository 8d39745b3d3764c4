package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// DLQSummaryInput is the input of pgbus_dlq_summary.
type DLQSummaryInput struct {
	DeadFilter
	Cursor  string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same filters. Omit for the first page."`
	By      string `json:"by,omitempty" jsonschema:"enum=group,enum=error_class" jsonschema_description:"group (default): groups as above. error_class: every message counted by error class across all DLQs, with reasons and the DLQs each touches (classes), to see which failure an incident is; no cursor or by_field."`
	ByField string `json:"by_field,omitempty" jsonschema_description:"A safe payload field (one of payload_policy.safe_fields in pgbus_health, such as tenant or file.type): each group is broken down by its values, the 5 most frequent and the rest counted, so that failures sharing one value (partner = p-9) show."`
}

const dlqSummaryDescription = `Dead messages grouped by source queue, job kind, error class and error pattern (the last error message with numbers, ids, quoted values and hex replaced: "order 42 failed" and "order 43 failed" are one group), with counts, first and last time seen, reasons, a representative error message (redacted) and sample message ids: the first stop when investigating failures.

Filters (queue, kind, error_class, reason, since, until, text, group) narrow what is counted; by error_class counts them by error class across DLQs, with the queues each touches. by_field breaks each group down by a payload field the operator named safe (pgbus_health lists them), without showing payloads. Next: for each group that matters, call pgbus_dlq_show with one of its sample_msg_ids and its dlq as queue to read the error, backtrace and failure history; pgbus_dlq_list with the group's filters lists all its messages. Then pgbus_dlq_retry (transient causes, once fixed) or pgbus_dlq_discard (bad input that will never succeed) with the same filters and a limit.`

// NewDLQSummary returns the pgbus_dlq_summary tool.
func NewDLQSummary(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_dlq_summary", dlqSummaryDescription, readAnnotations("Dead-letter summary"), DLQSummaryInput{}, ops.DLQSummary{}),
		Handler: handler(d, func(ctx context.Context, in DLQSummaryInput) (ops.DLQSummary, error) {
			return d.Ops.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: in.ops(), By: in.By, ByField: in.ByField, Cursor: in.Cursor})
		}),
	}
}
