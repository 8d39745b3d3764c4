// Package resources holds pgbus's MCP resources, resource templates and
// prompts:
//
//   - pgbus://queues: every work queue with its stats (JSON);
//   - pgbus://queues/{queue}/stats: one queue's stats (template);
//   - pgbus://dlq/{queue}/{msg_id}: one dead message, its dead-letter block
//     and failure history (template); the payload only when the server
//     allows payloads, redacted and bounded;
//   - the investigate_dead_letters prompt: the investigation runbook.
//
// Like the tools, resources call the operations layer (package ops); no
// SQL lives here.
package resources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// URIs and URI templates of the resources.
const (
	URIQueues          = "pgbus://queues"
	URIQueueStats      = "pgbus://queues/{queue}/stats"
	URIDeadMessage     = "pgbus://dlq/{queue}/{msg_id}"
	mimeJSON           = "application/json"
	queueStatsPrefix   = "pgbus://queues/"
	deadMessagePrefix  = "pgbus://dlq/"
	deadMessageExample = "pgbus://dlq/orders/42"
)

// Register adds the resources, resource templates and prompts to s.
func Register(s *server.MCPServer, d tools.Deps) {
	r := &reader{d: d}
	s.AddResource(mcp.NewResource(URIQueues, "queues",
		mcp.WithResourceDescription("Every work queue with its stats: depth (ready, in flight, waiting to retry, scheduled), age of the oldest ready message, DLQ depth, outcomes of the last hour, throughput, latency, paused flag and retry settings. Read pgbus://queues/{queue}/stats for one queue."),
		mcp.WithMIMEType(mimeJSON),
	), r.queues)
	s.AddResourceTemplate(mcp.NewResourceTemplate(URIQueueStats, "queue-stats",
		mcp.WithTemplateTitle("Stats of one queue"),
		mcp.WithTemplateDescription("Stats of one work queue (the names are listed by pgbus://queues): depth split into ready, in flight, waiting to retry and scheduled, oldest ready message, DLQ depth, last hour's outcomes, throughput, latency, paused flag and retry settings."),
		mcp.WithTemplateMIMEType(mimeJSON),
	), r.queueStats)
	s.AddResourceTemplate(mcp.NewResourceTemplate(URIDeadMessage, "dead-message",
		mcp.WithTemplateTitle("One dead message"),
		mcp.WithTemplateDescription("One message in a dead-letter queue: queue is the source queue (orders) or its DLQ (orders_dlq), msg_id its id in the DLQ (from pgbus_dlq_list or pgbus_dlq_summary). Returns the dead-letter block (reason, attempts, error, backtrace), headers and the failure history of every attempt; the payload only when the server runs with --allow-payloads, with secrets redacted."),
		mcp.WithTemplateMIMEType(mimeJSON),
	), r.deadMessage)
	registerPrompt(s, r)
}

type reader struct{ d tools.Deps }

// QueuesDocument is the content of pgbus://queues.
type QueuesDocument struct {
	// Queues are the work queues (DLQs are not listed on their own: each
	// queue's DLQ depth is in its stats).
	Queues []ops.QueueStats `json:"queues"`
	// Omitted counts the quietest queues left out so that the document
	// stays under the response bound; Notes says so.
	Omitted int      `json:"omitted,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Next says where to look next.
	Next string `json:"next"`
}

func (r *reader) queues(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	res, err := r.d.Ops.QueueStats(ctx, ops.QueueStatsRequest{})
	if err != nil {
		return nil, readError(ctx, req.Params.URI, err)
	}
	return jsonContents(req.Params.URI, QueuesDocument{
		Queues: res.Queues, Omitted: res.Omitted, Notes: ops.WordAsks(res.Notes, res.Asks, queuesNote),
		Next: "for dead messages call pgbus_dlq_summary; for one queue read pgbus://queues/{queue}/stats",
	})
}

// queuesNote words the ask of a note of pgbus://queues as a reader asks:
// by the resource of one queue.
func queuesNote(a ops.Ask, note string) string {
	if a.Kind == ops.AskOneQueue {
		return note + "; read pgbus://queues/{queue}/stats for one of the others; pgbus queues on the command line lists them all"
	}
	return vocab.ToolNote(a, note)
}

func (r *reader) queueStats(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	queue, ok := strings.CutSuffix(strings.TrimPrefix(uri, queueStatsPrefix), "/stats")
	if !strings.HasPrefix(uri, queueStatsPrefix) || !ok || queue == "" || strings.Contains(queue, "/") {
		return nil, invalidParams(fmt.Sprintf("resource %s is not of the form pgbus://queues/{queue}/stats; read pgbus://queues for the queue names", shownURI(uri)))
	}
	res, err := r.d.Ops.QueueStats(ctx, ops.QueueStatsRequest{Queue: queue})
	if err != nil {
		return nil, readError(ctx, uri, err)
	}
	return jsonContents(uri, res.Queues[0])
}

// deadMessage reads pgbus://dlq/{queue}/{msg_id}: the same view of a dead
// message as the pgbus_dlq_show tool, with the payload when the server
// allows payloads.
func (r *reader) deadMessage(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	queue, msgID, ok := splitDeadURI(uri)
	if !ok {
		return nil, invalidParams(fmt.Sprintf("resource %s is not of the form pgbus://dlq/{queue}/{msg_id}, for example %s; find dead messages with pgbus_dlq_list", shownURI(uri), deadMessageExample))
	}
	id, err := deadMessageID(uri, msgID)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	if err := ops.CheckQueueName(queue); err != nil {
		return nil, invalidParams(fmt.Sprintf("resource %s: %v; use the source queue (orders) or its DLQ (orders_dlq) as pgbus_dlq_summary shows them", shownURI(uri), err))
	}
	m, err := r.d.Ops.DLQShow(ctx, ops.DLQShowRequest{Queue: queue, MsgID: id, IncludePayload: true})
	if err != nil {
		return nil, readError(ctx, uri, err)
	}
	tools.NameHints(reflect.ValueOf(&m), r.d)
	tools.WordNotes(&m)
	return jsonContents(uri, m)
}

// splitDeadURI returns the queue and the msg_id of a dead message's URI,
// as written, and false when uri is not of the form
// pgbus://dlq/{queue}/{msg_id}.
func splitDeadURI(uri string) (queue, msgID string, ok bool) {
	rest, ok := strings.CutPrefix(uri, deadMessagePrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 2 || parts[0] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// deadMessageID reads the msg_id of a dead message's URI: written as
// pgbus_dlq_list writes ids, or refused saying so.
func deadMessageID(uri, msgID string) (int64, error) {
	id, err := ops.ParseID(msgID)
	if err != nil {
		return 0, fmt.Errorf("resource %s: msg_id: %v; pgbus_dlq_list shows the ids there are (msg_id); for example %s", shownURI(uri), err, deadMessageExample)
	}
	return id, nil
}

// CheckRead is a request hook (server.Hooks.AddOnRequestInitialization)
// that refuses a read of, or a subscription to, a URI that is missing or
// too long, and a read of a dead message whose msg_id is not written as
// pgbus_dlq_list writes ids, with the error the resource gives. mcp-go
// passes 042 on to the resource, which refuses it, but answers +42 (a
// character a URI template's variable does not match) with a bare
// "resource not found", which does not say what is wrong, and quotes back
// whatever URI it does not know, however long. mcp-go answers a hook's
// error as an invalid request (-32600); the transports of pgbus serve call
// it first and answer its error as invalid params (-32602), as it is.
func CheckRead(_ context.Context, _ any, message any) error {
	if _, uri, ok := RequestURI(message); ok {
		return checkURI(uri)
	}
	return nil
}

// RequestURI returns the method and the URI of a request message that
// reads a resource or subscribes or unsubscribes to one, as a request hook
// gets it; false for any other message.
func RequestURI(message any) (method mcp.MCPMethod, uri string, ok bool) {
	raw, isRaw := message.(json.RawMessage)
	if !isRaw || !bytes.Contains(raw, []byte(`"resources/`)) {
		return "", "", false
	}
	var req struct {
		Method mcp.MCPMethod `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil {
		return "", "", false
	}
	switch req.Method {
	case mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe:
		return req.Method, req.Params.URI, true
	}
	return "", "", false
}

// MaxURIBytes bounds a resource URI: pgbus's are far shorter (a queue's
// name, a message's id), and a longer one is refused before the server
// quotes it back whole.
const MaxURIBytes = 1024

// checkURI refuses a URI that is missing, too long, or a dead message's
// with a msg_id not written as pgbus_dlq_list writes ids.
func checkURI(uri string) error {
	switch {
	case uri == "":
		return fmt.Errorf("uri is required: read %s, %s or %s", URIQueues, URIQueueStats, deadMessageExample)
	case len(uri) > MaxURIBytes:
		return fmt.Errorf("resource URI %s is %d bytes; pgbus's are at most %d: read %s, %s or %s", shownURI(uri), len(uri), MaxURIBytes, URIQueues, URIQueueStats, deadMessageExample)
	}
	if _, msgID, ok := splitDeadURI(uri); ok {
		_, err := deadMessageID(uri, msgID)
		return err
	}
	return nil
}

// shownURI is uri as an error quotes it: its start when it is long.
func shownURI(uri string) string {
	const most = 120
	if len(uri) <= most {
		return uri
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(uri[cut]) {
		cut--
	}
	return uri[:cut] + "…"
}

// readError turns an engine error into a resource error whose message says
// what to do, with its secrets hidden as in every other output, and whose
// JSON-RPC code says what kind of failure it is: a resource that does not
// exist is "resource not found" (-32002; invalid params, -32602, from
// protocol 2026-07-28, which retired the MCP-specific code), a URI that
// names nothing valid invalid params, anything else an internal error.
func readError(ctx context.Context, uri string, err error) error {
	msg, _ := ops.RedactText(readErrorText(uri, err))
	switch {
	case errors.Is(err, ops.ErrNotFound):
		code := mcp.RESOURCE_NOT_FOUND
		if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
			code = mcp.INVALID_PARAMS
		}
		return server.NewHandlerError(readFailure{code: code, msg: msg})
	case errors.Is(err, ops.ErrInvalid):
		return invalidParams(msg)
	}
	return errors.New(msg)
}

// badURI is the error of a read whose URI names nothing valid.
func invalidParams(msg string) error {
	return server.NewHandlerError(readFailure{code: mcp.INVALID_PARAMS, msg: msg})
}

// readFailure is a resource read's error with its JSON-RPC code.
type readFailure struct {
	code int
	msg  string
}

func (e readFailure) Error() string { return e.msg }

// JSONRPCError is the error as the server answers it.
func (e readFailure) JSONRPCError() mcp.JSONRPCError {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, Error: mcp.JSONRPCErrorDetails{Code: e.code, Message: e.msg}}
}

func readErrorText(uri string, err error) string {
	var oe *ops.Error
	switch {
	case errors.As(err, &oe):
		return fmt.Sprintf("resource %s: %s", shownURI(uri), oe.Msg+resourceHints(ops.NextSteps(err)))
	case errors.Is(err, ops.ErrNotFound), errors.Is(err, ops.ErrInvalid):
		return fmt.Sprintf("resource %s: %v", shownURI(uri), err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("resource %s: the read was cancelled or timed out; try again", shownURI(uri))
	}
	then := "try again later"
	if next := ops.NextSteps(err); len(next) > 0 {
		then = resourceCalls(next, "check") + " and try again later"
	}
	return fmt.Sprintf("resource %s: pgbus could not read it (%v); this is a server-side problem, not a bad URI: %s", shownURI(uri), err, then)
}

// resourceHints names next steps as resources where one reads the same,
// else as tools.
func resourceHints(hints []ops.Hint) string {
	if len(hints) == 0 {
		return ""
	}
	return "; " + resourceCalls(hints, "see")
}

// resourceCalls names hints as resources to read ("read pgbus://queues")
// or tools to call, one or another; verb goes before a tool that follows
// no other tool ("see pgbus_health or pgbus_dlq_list {...}"; none when
// verb is empty).
func resourceCalls(hints []ops.Hint, verb string) string {
	out := make([]string, len(hints))
	afterTool := false
	for i, h := range hints {
		if h.Op == ops.OpQueueStats && len(h.Args) == 0 {
			out[i], afterTool = "read "+URIQueues, false
			continue
		}
		out[i] = vocab.ToolCall(h)
		if verb != "" && !afterTool {
			out[i] = verb + " " + out[i]
		}
		afterTool = true
	}
	return strings.Join(out, " or ")
}

func jsonContents(uri string, v any) ([]mcp.ResourceContents, error) {
	text, err := tools.JSONText(v)
	if err != nil {
		return nil, fmt.Errorf("resource %s: encode: %v", shownURI(uri), err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mimeJSON, Text: text}}, nil
}
