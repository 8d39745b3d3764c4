package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// AuditInput is the input of pgbus_audit.
type AuditInput struct {
	Tool   string `json:"tool,omitempty" jsonschema_description:"Only calls of this operation: a tool name (pgbus_dlq_retry) or operation (dlq_retry). Omit for all."`
	Client string `json:"client,omitempty" jsonschema_description:"Only calls of this client: cli, dashboard, or an MCP client's name/version as listed. Omit for all."`
	Cursor string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same filters. Omit for the first page."`
	Limit  *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Entries per page: 1 to 100, default 25."`
}

const auditDescription = `Recent write operations (retries, discards, purges, pauses, resumes, circuit resets, sends and queue changes) from agents, the CLI and the dashboard, newest first: which operation, with what arguments, what it did, which client (as it named itself), over which transport and authenticated as whom, when, and whether it failed.

Use it to check what was already done before retrying or discarding again (pgbus_dlq_retry, pgbus_dlq_discard), or to report on actions taken. Pages: pass next_cursor back as cursor; limit 1 to 100, default 25.`

// NewAudit returns the pgbus_audit tool.
func NewAudit(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_audit", auditDescription, readAnnotations("Audit log of write calls"), AuditInput{}, ops.AuditPage{}),
		Handler: handler(func(ctx context.Context, in AuditInput) (ops.AuditPage, error) {
			limit, err := pageLimit(in.Limit)
			if err != nil {
				return ops.AuditPage{}, err
			}
			return d.Ops.Audit(ctx, ops.AuditRequest{Op: in.Tool, Client: in.Client, Cursor: in.Cursor, Limit: limit})
		}),
	}
}
