package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Bounds of what the audit log keeps of one operation.
const (
	maxAuditValue = 1 << 10
	maxAuditJSON  = 8 << 10
	auditTimeout  = 5 * time.Second
)

// record writes one write operation to the audit log: the operation, its
// arguments (secrets redacted, payloads only by size), a summary of its
// result or its error, and the client. A request rejected before anything
// was written (invalid, or refused as read-only) leaves no entry; any
// other outcome does, even after the caller's context ended, since the
// write may have happened. A failure to record is logged, not returned.
func (s *Service) record(ctx context.Context, op string, args, result any, opErr error) {
	if errors.Is(opErr, ErrInvalid) || errors.Is(opErr, ErrReadOnly) {
		return
	}
	who := CallerFrom(ctx)
	e := store.AuditEntry{Client: who.Client, Transport: who.Transport, Principal: who.Principal,
		Tool: op, Arguments: auditJSON(args), IsError: opErr != nil}
	if opErr != nil {
		msg, _ := RedactText(opErr.Error())
		e.Result = marshalPlain(map[string]string{"error": msg})
	} else {
		e.Result = auditJSON(result)
	}
	if ok, isOK := result.(interface{ OK() bool }); isOK && opErr == nil && !ok.OK() {
		e.IsError = true // some ids were not handled
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if err := s.store.RecordAudit(actx, e); err != nil && s.opts.Logger != nil {
		s.opts.Logger.Warn("pgbus: could not record the operation in the audit log", "op", op, "err", err)
	}
}

// auditJSON marshals v for the audit log: secrets redacted, values over a
// kilobyte replaced by a note of their size, the whole bounded.
func auditJSON(v any) json.RawMessage {
	raw, n, ok := RedactJSON(marshalPlain(v))
	if !ok {
		return json.RawMessage(`{"unreadable": true}`)
	}
	_ = n
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		if len(raw) > maxAuditJSON {
			return sizeNote(len(raw))
		}
		return raw
	}
	for k, val := range fields {
		if len(val) > maxAuditValue {
			fields[k] = sizeNote(len(val))
		}
	}
	out := marshalPlain(fields)
	if len(out) > maxAuditJSON {
		return sizeNote(len(out))
	}
	return out
}

func sizeNote(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"truncated": true, "bytes": %d}`, n))
}

func retryAuditArgs(r DLQRetryRequest) map[string]any {
	args := map[string]any{"filter": r.Filter, "dry_run": r.DryRun}
	if r.Expect != "" {
		args["expect"] = r.Expect
	}
	if len(r.IDs) > 0 {
		args["ids"] = r.IDs
	}
	if r.Limit != 0 {
		args["limit"] = r.Limit
	}
	if len(r.Payload) > 0 {
		// A corrected payload is a payload: the audit log, readable by
		// every agent, keeps only its size.
		args["payload_bytes"] = len(r.Payload)
	}
	return args
}

func retryAuditResult(r DLQRetry) any {
	r.Next, r.Moved = nil, nil
	return r
}

func discardAuditArgs(r DLQDiscardRequest) map[string]any {
	args := map[string]any{"filter": r.Filter, "dry_run": r.DryRun}
	if len(r.IDs) == 0 && !r.DryRun {
		args["confirm"], args["asked"] = r.Confirm, r.Ask != nil
	}
	if r.Expect != "" {
		args["expect"] = r.Expect
	}
	if len(r.IDs) > 0 {
		args["ids"] = r.IDs
	}
	if r.Limit != 0 {
		args["limit"] = r.Limit
	}
	return args
}

func discardAuditResult(r DLQDiscard) any {
	r.Next, r.Moved = nil, nil
	return r
}

// AuditRequest asks for a page of the audit log, newest first.
type AuditRequest struct {
	// Op is an operation name (dlq_retry) or, for entries recorded by older
	// versions, a tool or command name (pgbus_dlq_retry, "dlq retry"); ""
	// for all.
	Op string
	// Client is a client name as recorded (cli, an MCP client); "" for all.
	Client string
	Cursor string
	Limit  int
}

// AuditEntry is one recorded write operation.
type AuditEntry struct {
	ID        int64           `json:"id"`
	At        time.Time       `json:"at"`
	Client    string          `json:"client" jsonschema_description:"Who called, as the caller said: cli, dashboard, or mcp: and the name/version an MCP client declared."`
	Transport string          `json:"transport" jsonschema_description:"How the call came in: cli (the command line), stdio, sse or http (MCP); empty for entries recorded before pgbus kept it."`
	Principal string          `json:"principal,omitempty" jsonschema_description:"Who authenticated the call, when someone did: over HTTP with the bearer token, token sha256: and the start of the token's SHA-256."`
	Op        string          `json:"tool" jsonschema_description:"The operation (dlq_retry, dlq_discard, queue_pause, ...)."`
	Arguments json.RawMessage `json:"arguments" jsonschema_description:"Its arguments, secrets redacted, payloads only by size."`
	Result    json.RawMessage `json:"result" jsonschema_description:"A summary of its result, or its error."`
	IsError   bool            `json:"is_error" jsonschema_description:"It failed, or some of its ids were not handled."`
}

// AuditPage is a page of the audit log.
type AuditPage struct {
	Items      []AuditEntry `json:"items" jsonschema_description:"Write operations, newest first."`
	NextCursor string       `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor for the next page. Absent on the last page."`
}

// Audit lists recorded write operations, newest first.
func (s *Service) Audit(ctx context.Context, req AuditRequest) (AuditPage, error) {
	// The audit log names the operation "tool", as its entries do.
	if err := checkText("tool", req.Op, "client", req.Client, "cursor", req.Cursor); err != nil {
		return AuditPage{}, err
	}
	limit, err := pageLimit(req.Limit)
	if err != nil {
		return AuditPage{}, err
	}
	page, err := s.store.ListAudit(ctx, store.AuditFilter{Tool: OpName(req.Op), Client: req.Client}, req.Cursor, limit)
	if err != nil {
		return AuditPage{}, explain(err, hint(OpAudit, "start again from the first page"))
	}
	out := AuditPage{Items: make([]AuditEntry, len(page.Items)), NextCursor: page.NextCursor}
	for i, e := range page.Items {
		args, _, _ := RedactJSON(e.Arguments)
		res, _, _ := RedactJSON(e.Result)
		out.Items[i] = AuditEntry{ID: e.ID, At: e.At, Client: e.Client, Transport: e.Transport, Principal: e.Principal,
			Op: e.Tool, Arguments: args, Result: res, IsError: e.IsError}
	}
	return out, nil
}

// OpName turns a tool name (pgbus_dlq_retry) or command ("dlq retry",
// "dlq retry-all") into the operation name the audit log records.
func OpName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "pgbus_")
	s = strings.NewReplacer(" ", "_", "-", "_").Replace(s)
	switch s {
	case "dlq_retry_all":
		return OpDLQRetry
	case "queues":
		return OpQueueStats
	}
	return s
}
