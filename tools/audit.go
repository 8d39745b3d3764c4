package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// AuditInput is the input of pgbus_audit.
type AuditInput struct {
	Tool   string `json:"tool,omitempty" jsonschema_description:"Only calls of this operation: a tool name (pgbus_dlq_retry) or operation (dlq_retry, send), or all for every one. Omit for all but sends."`
	Client string `json:"client,omitempty" jsonschema_description:"Only calls of this client: cli, dashboard, or an MCP client's name/version as listed. Omit for all."`
	Since  string `json:"since,omitempty" jsonschema_description:"Only calls since this time: RFC 3339, a date (midnight UTC), or an age (30m, 2h, 7d)."`
	Cursor string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same filters. Omit for the first page."`
	Limit  *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Entries per page: 1 to 100, default 25."`
}

const auditDescription = `Recent write operations (retries, discards, purges, pauses, resumes, circuit resets, queue changes) by agents, the CLI and the dashboard, newest first: operation, arguments, result, client, transport, principal, time, failure. Sends are left out unless tool is send or all.

Use it before calling pgbus_dlq_retry or pgbus_dlq_discard again, or to report what was done. Filters: tool, client, since. Pages: pass next_cursor back as cursor; limit 1 to 100, default 25; a page too large for one response lists fewer entries and says so.`

// NewAudit returns the pgbus_audit tool.
func NewAudit(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_audit", auditDescription, readAnnotations("Audit log of write calls"), AuditInput{}, ops.AuditPage{}),
		Handler: handler(d, func(ctx context.Context, in AuditInput) (ops.AuditPage, error) {
			limit, err := pageLimit(in.Limit, ops.OpAudit)
			if err != nil {
				return ops.AuditPage{}, err
			}
			return d.Ops.Audit(ctx, ops.AuditRequest{Op: in.Tool, Client: in.Client, Since: in.Since, Cursor: in.Cursor, Limit: limit})
		}),
	}
}
