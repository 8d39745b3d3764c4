package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// Bounds of what the audit log keeps of one call.
const (
	maxAuditArguments = 8 << 10
	maxAuditResult    = 8 << 10
	maxAuditValue     = 1 << 10 // one argument value, such as a corrected payload
	auditTimeout      = 5 * time.Second
	unknownClient     = "unknown"
)

// audited wraps the handler of a write tool so that every call, whatever
// its outcome, is recorded in the audit log: the tool, its arguments
// (secrets redacted, large values cut), a summary of the result, the
// client, and whether it failed.
func audited(d Deps, tool string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if d.Admin == nil {
			return res, err
		}
		entry := store.AuditEntry{
			Client:    clientName(ctx),
			Tool:      tool,
			Arguments: auditArguments(req),
			Result:    auditResult(res, err),
			IsError:   err != nil || res == nil || res.IsError,
		}
		// Record even when the call's context ended: the write may have
		// happened.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
		defer cancel()
		if aerr := d.Admin.RecordAudit(actx, entry); aerr != nil && res != nil {
			res.Content = append(res.Content, mcp.NewTextContent(
				"warning: this call could not be recorded in the audit log: "+aerr.Error()))
		}
		return res, err
	}
}

// clientName names the MCP client of the call's session, as it introduced
// itself (name/version), or "unknown".
func clientName(ctx context.Context) string {
	withInfo, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return unknownClient
	}
	info := withInfo.GetClientInfo()
	name := info.Name
	if name == "" {
		return unknownClient
	}
	if info.Version != "" {
		name += "/" + info.Version
	}
	s, _ := cutChars(name, 200)
	return s
}

// auditArguments returns the call's arguments for the audit log: secrets
// redacted, long values replaced by a note of their size, the whole
// bounded.
func auditArguments(req mcp.CallToolRequest) json.RawMessage {
	raw, err := rawArguments(req)
	if err != nil {
		return json.RawMessage(`{"unreadable": true}`)
	}
	if len(raw) > maxArgumentsBytes {
		return sizeNote(len(raw))
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil || args == nil {
		return json.RawMessage(fmt.Sprintf(`{"not_an_object": true, "bytes": %d}`, len(raw)))
	}
	for k, v := range args {
		red, _, ok := redactJSON(v)
		switch {
		case !ok:
			args[k] = sizeNote(len(v))
		case secretKey.MatchString(k):
			args[k] = json.RawMessage(`"` + redactedValue + `"`)
		case len(red) > maxAuditValue:
			args[k] = sizeNote(len(red))
		default:
			args[k] = red
		}
	}
	out := marshalPlain(args)
	if len(out) > maxAuditArguments {
		return sizeNote(len(out))
	}
	return out
}

// auditResult summarizes a call's result for the audit log: the structured
// output, or the error text.
func auditResult(res *mcp.CallToolResult, err error) json.RawMessage {
	switch {
	case err != nil:
		return marshalPlain(map[string]string{"error": err.Error()})
	case res == nil:
		return json.RawMessage(`{"error": "no result"}`)
	case res.IsError:
		text := ""
		for _, c := range res.Content {
			if t, ok := c.(mcp.TextContent); ok {
				text = t.Text
				break
			}
		}
		text, _ = cutChars(text, 2000)
		return marshalPlain(map[string]string{"error": text})
	}
	out := marshalPlain(res.StructuredContent)
	if len(out) <= maxAuditResult {
		return out
	}
	// Keep the counts; cut the lists.
	var fields map[string]json.RawMessage
	if json.Unmarshal(out, &fields) != nil || fields == nil {
		return sizeNote(len(out))
	}
	for k, v := range fields {
		if len(v) > maxAuditValue {
			fields[k] = sizeNote(len(v))
		}
	}
	if small := marshalPlain(fields); len(small) <= maxAuditResult {
		return small
	}
	return sizeNote(len(out))
}

func sizeNote(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"truncated": true, "bytes": %d}`, n))
}
