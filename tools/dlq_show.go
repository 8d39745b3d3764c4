package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// DLQShowInput is the input of pgbus_dlq_show.
type DLQShowInput struct {
	Queue          string `json:"queue,omitempty" jsonschema_description:"The message's DLQ (orders_dlq) or its queue (orders), as pgbus_dlq_list shows it in dlq. May be omitted when only one DLQ holds msg_id."`
	MsgID          int64  `json:"msg_id" jsonschema:"minimum=1" jsonschema_description:"The dead message's id in its DLQ (msg_id in pgbus_dlq_list, sample_msg_ids in pgbus_dlq_summary)."`
	IncludePayload bool   `json:"include_payload,omitempty" jsonschema_description:"Return the payload too. Shown only when the server runs with --allow-payloads; values under keys such as password, token, secret or authorization, and secrets in text, are redacted."`
	FullHistory    bool   `json:"full_history,omitempty" jsonschema_description:"List every failure as recorded; by default identical failures in a row are one entry with repeated."`
}

const dlqShowDescription = `One dead message in full: the dead-letter block (reason, source queue, attempts, last error class, message and backtrace), headers, the failure history of its attempts, and, when allowed, the payload. Secrets are redacted everywhere: in the payload, the headers, error messages and backtraces.

Use it after pgbus_dlq_summary or pgbus_dlq_list to understand why a message died. queue may be omitted when only one DLQ holds msg_id; otherwise the error lists the DLQs to choose from. Payloads are hidden unless the server runs with --allow-payloads and include_payload is true; the payload fields the operator named safe (--safe-fields) are shown in safe_fields either way; large payloads and long backtraces are shortened with a note (the CLI, pgbus dlq show, shows them whole). Next: pgbus_dlq_retry (ids: [msg_id], and a corrected payload when the data was wrong) or pgbus_dlq_discard.`

// NewDLQShow returns the pgbus_dlq_show tool.
func NewDLQShow(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_dlq_show", dlqShowDescription, readAnnotations("Show a dead message"), DLQShowInput{}, ops.DeadMessage{}),
		Handler: handler(d, func(ctx context.Context, in DLQShowInput) (ops.DeadMessage, error) {
			return d.Ops.DLQShow(ctx, ops.DLQShowRequest{Queue: in.Queue, MsgID: in.MsgID, IncludePayload: in.IncludePayload, FullHistory: in.FullHistory})
		}),
	}
}
