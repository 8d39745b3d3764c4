package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// HealthInput is the input of pgbus_health: none, or a code whose
// reasons to list a page at a time.
type HealthInput struct {
	Code   string `json:"code,omitempty" jsonschema_description:"Only reasons of this code, by queue, for those omitted; the verdict and totals still count all. Omit for every reason."`
	Cursor string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same code. Omit for the first page."`
}

const healthDescription = `One-look health of pgbus: OK, DEGRADED or STALLED, with a reason for each problem (stalled backlog, no_workers: no running worker serves a queue pgbus manages (not another PGMQ client's) with ready or retrying messages, never served or its workers stopped; stale workers, new dead letters, paused queues, circuit_open: a breaker in use is open and its jobs wait; dlq_of_dropped_queue: a dropped queue's DLQ holds dead messages; workers_of_dropped_queue: running workers serve a dropped queue, waiting for it to be made again) and totals of backlog, dead messages and running workers; STALLED reasons come first; omitted counts those that did not fit (code lists one kind's, paged). payload_policy says whether payloads may be shown and which payload fields are safe to show without them. UNREACHABLE (reason database_unreachable): the database does not answer (down or restarting) and every tool fails until it does; call again in a moment. A NOTICE reason leaves the verdict as it is: schema_newer: a newer pgbus migrated the database; ask the operator to upgrade it. standby: a read replica, its data as old as the reason says.

Use it first when asked "is anything wrong?" or before investigating failures. Next: each reason's next names the tool to call; dead letters start at pgbus_dlq_summary, a stalled queue at pgbus_queue_messages.`

// NewHealth returns the pgbus_health tool.
func NewHealth(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_health", healthDescription, readAnnotations("Health overview"), HealthInput{}, ops.Health{}),
		Handler: handler(d, func(ctx context.Context, in HealthInput) (ops.Health, error) {
			return d.Ops.HealthOf(ctx, ops.HealthRequest{Code: in.Code, Cursor: in.Cursor})
		}),
	}
}
