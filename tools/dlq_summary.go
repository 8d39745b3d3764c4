package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// DLQSummaryInput is the input of pgbus_dlq_summary.
type DLQSummaryInput struct {
	DeadFilter
}

// DLQSummaryOutput is the output of pgbus_dlq_summary.
type DLQSummaryOutput struct {
	Groups []store.DeadGroup `json:"groups" jsonschema_description:"Dead messages grouped by (dlq, source queue, kind, error class), largest group first, each with up to 5 sample ids, newest first."`
	Total  int64             `json:"total" jsonschema_description:"Dead messages in the groups listed."`
	// TotalGroups and Truncated tell when the list was cut.
	TotalGroups int  `json:"total_groups" jsonschema_description:"Groups the filters select; more than the groups listed when truncated."`
	Truncated   bool `json:"truncated,omitempty" jsonschema_description:"Only the largest groups are listed: narrow the filters (queue, kind, error_class) to see the others."`
}

const dlqSummaryDescription = `Dead messages grouped by source queue, job kind and error class, with counts, first and last time seen, reasons and sample message ids: the first stop when investigating failures.

Filters (queue, kind, error_class, reason, since, until, text) narrow what is counted. Next: for each group that matters, call pgbus_dlq_show with one of its sample_msg_ids and its dlq as queue to read the error, backtrace and failure history; pgbus_dlq_list with the group's filters lists all its messages. Then pgbus_dlq_retry (transient causes, once fixed) or pgbus_dlq_discard (bad input that will never succeed) with the same filters and a limit.`

// NewDLQSummary returns the pgbus_dlq_summary tool.
func NewDLQSummary(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_dlq_summary", dlqSummaryDescription, readAnnotations("Dead-letter summary"), DLQSummaryInput{}, DLQSummaryOutput{}),
		Handler: handler(func(ctx context.Context, in DLQSummaryInput) (DLQSummaryOutput, error) {
			f, err := in.toStore(time.Now())
			if err != nil {
				return DLQSummaryOutput{}, err
			}
			sum, err := d.DLQ.SummaryReport(ctx, f)
			out := DLQSummaryOutput{Groups: sum.Groups, TotalGroups: sum.TotalGroups, Truncated: sum.Truncated}
			for _, g := range sum.Groups {
				out.Total += g.Count
			}
			return out, err
		}),
	}
}
