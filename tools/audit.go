package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// AuditInput is the input of pgbus_audit.
type AuditInput struct {
	Tool   string `json:"tool,omitempty" jsonschema_description:"Only calls of this tool (pgbus_dlq_retry) or CLI command. Omit for all."`
	Cursor string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same tool. Omit for the first page."`
	Limit  *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Entries per page: 1 to 100, default 25."`
}

// AuditOutput is the output of pgbus_audit.
type AuditOutput struct {
	Items      []store.AuditEntry `json:"items" jsonschema_description:"Write calls, newest first: tool, arguments (secrets redacted, large values cut), result summary, client and time."`
	NextCursor string             `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor for the next page. Absent on the last page."`
}

const auditDescription = `Recent write operations (retries, discards, purges, pauses and resumes) from agents and the CLI, newest first: which tool, with what arguments, what it did, which client, when, and whether it failed.

Use it to check what was already done before retrying or discarding again (pgbus_dlq_retry, pgbus_dlq_discard), or to report on actions taken. Pages: pass next_cursor back as cursor; limit 1 to 100, default 25.`

// NewAudit returns the pgbus_audit tool.
func NewAudit(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_audit", auditDescription, readAnnotations("Audit log of write calls"), AuditInput{}, AuditOutput{}),
		Handler: handler(func(ctx context.Context, in AuditInput) (AuditOutput, error) {
			limit, err := pageLimit(in.Limit)
			if err != nil {
				return AuditOutput{}, err
			}
			page, err := d.Admin.Audit(ctx, store.AuditFilter{Tool: in.Tool}, in.Cursor, limit)
			return AuditOutput{Items: page.Items, NextCursor: page.NextCursor}, err
		}),
	}
}
