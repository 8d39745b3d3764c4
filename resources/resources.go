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
// Like the tools, resources call the engine's Go API; no SQL lives here.
package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
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
	maxHistoryShown    = 20
	maxErrorChars      = 2000
	maxBacktraceLines  = 10
	maxBacktraceChars  = 2000
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
	registerPrompt(s)
}

type reader struct{ d tools.Deps }

// QueuesDocument is the content of pgbus://queues.
type QueuesDocument struct {
	// Queues are the work queues (DLQs are not listed on their own: each
	// queue's DLQ depth is in its stats).
	Queues []store.QueueStats `json:"queues"`
	// Next says where to look next.
	Next string `json:"next"`
}

func (r *reader) queues(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	stats, err := r.d.Admin.QueueStats(ctx, "")
	if err != nil {
		return nil, readError(req.Params.URI, err)
	}
	if stats == nil {
		stats = []store.QueueStats{}
	}
	return jsonContents(req.Params.URI, QueuesDocument{
		Queues: stats,
		Next:   "for dead messages call pgbus_dlq_summary; for one queue read pgbus://queues/{queue}/stats",
	})
}

func (r *reader) queueStats(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	queue, ok := strings.CutSuffix(strings.TrimPrefix(uri, queueStatsPrefix), "/stats")
	if !strings.HasPrefix(uri, queueStatsPrefix) || !ok || queue == "" || strings.Contains(queue, "/") {
		return nil, fmt.Errorf("resource %s is not of the form pgbus://queues/{queue}/stats; read pgbus://queues for the queue names", uri)
	}
	if err := store.ValidatePhysicalName(queue); err != nil {
		return nil, fmt.Errorf("resource %s: %v; read pgbus://queues for the queue names", uri, err)
	}
	stats, err := r.d.Admin.QueueStats(ctx, queue)
	if err != nil {
		return nil, readError(uri, err)
	}
	if len(stats) == 0 {
		return nil, fmt.Errorf("resource %s: queue %q does not exist; read pgbus://queues for the queue names", uri, queue)
	}
	return jsonContents(uri, stats[0])
}

// DeadMessageDocument is the content of pgbus://dlq/{queue}/{msg_id}: the
// same view of a dead message as the pgbus_dlq_show tool. Payload is set
// only when the server allows payloads and it fits; a larger one is cut to
// PayloadPreview (text) with Truncated set. Notes say what was hidden or cut
// and how to get it.
type DeadMessageDocument struct {
	DLQ            string                 `json:"dlq"`
	MsgID          int64                  `json:"msg_id"`
	Kind           string                 `json:"kind,omitempty"`
	ReadCount      int                    `json:"read_ct"`
	DeadLetteredAt time.Time              `json:"dead_lettered_at"`
	DeadLetter     *store.DeadLetterBlock `json:"dead_letter,omitempty"`
	// Headers are the message's headers without the dead-letter block,
	// secrets redacted.
	Headers        json.RawMessage       `json:"headers,omitempty"`
	Payload        json.RawMessage       `json:"payload,omitempty"`
	PayloadPreview string                `json:"payload_preview,omitempty"`
	PayloadBytes   int                   `json:"payload_bytes"`
	PayloadShown   bool                  `json:"payload_shown"`
	Truncated      bool                  `json:"payload_truncated,omitempty"`
	Redacted       int                   `json:"redacted_values,omitempty"`
	Notes          []string              `json:"notes,omitempty"`
	History        []store.FailureRecord `json:"history"`
	HistoryOmitted int                   `json:"history_omitted,omitempty"`
	Next           string                `json:"next"`
}

func (r *reader) deadMessage(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	parts := strings.Split(strings.TrimPrefix(uri, deadMessagePrefix), "/")
	if !strings.HasPrefix(uri, deadMessagePrefix) || len(parts) != 2 || parts[0] == "" {
		return nil, fmt.Errorf("resource %s is not of the form pgbus://dlq/{queue}/{msg_id}, for example %s; find dead messages with pgbus_dlq_list", uri, deadMessageExample)
	}
	queue := parts[0]
	id, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || id <= 0 {
		return nil, fmt.Errorf("resource %s: msg_id %q is not a message id; give the positive integer id from pgbus_dlq_list, for example %s", uri, parts[1], deadMessageExample)
	}
	if err := store.ValidatePhysicalName(queue); err != nil {
		return nil, fmt.Errorf("resource %s: %v; use the source queue (orders) or its DLQ (orders_dlq) as pgbus_dlq_summary shows them", uri, err)
	}
	m, err := r.d.DLQ.Show(ctx, queue, id)
	if err != nil {
		return nil, readError(uri, err)
	}
	doc := DeadMessageDocument{
		DLQ: m.DLQ, MsgID: m.MsgID, Kind: m.Kind, ReadCount: m.ReadCount,
		DeadLetteredAt: m.DeadLetteredAt, DeadLetter: m.Block, PayloadBytes: len(m.Payload),
		Next: fmt.Sprintf("once the cause is fixed, retry it with pgbus_dlq_retry {\"queue\": %q, \"ids\": [%d]}; if it must never run, pgbus_dlq_discard with the same arguments", m.DLQ, m.MsgID),
	}
	var n int
	var note string
	doc.Headers, n, note = headersView(m.Headers)
	doc.Redacted += n
	doc.addNote(note)
	if r.d.AllowPayloads {
		v := viewPayload(m.Payload, fmt.Sprintf("call pgbus_dlq_show with queue %q, msg_id %d and include_payload: true, or run pgbus dlq show", m.DLQ, m.MsgID))
		doc.Payload, doc.PayloadPreview, doc.PayloadShown, doc.Truncated = v.payload, v.preview, v.shown, v.truncated
		doc.Redacted += v.redacted
		doc.addNote(v.note)
	} else {
		doc.addNote("payload hidden: the server runs without --allow-payloads; an operator can restart it with --allow-payloads to see payloads (secrets stay redacted)")
	}
	doc.History, doc.HistoryOmitted = boundHistory(m.History, r.d.AllowPayloads)
	if doc.HistoryOmitted > 0 {
		doc.addNote(fmt.Sprintf("history: the oldest %d attempts are left out; pgbus_dlq_show returns them", doc.HistoryOmitted))
	}
	return jsonContents(uri, doc)
}

func (d *DeadMessageDocument) addNote(n string) {
	if n != "" {
		d.Notes = append(d.Notes, n)
	}
}

// boundHistory keeps the newest attempts, bounds their texts and hides the
// original payload a payload-replaced record quotes unless payloads are
// allowed (then it is redacted).
func boundHistory(h []store.FailureRecord, allowPayloads bool) ([]store.FailureRecord, int) {
	omitted := 0
	if len(h) > maxHistoryShown {
		omitted = len(h) - maxHistoryShown
		h = h[omitted:]
	}
	out := make([]store.FailureRecord, len(h))
	for i, f := range h {
		if f.ErrorClass == store.PayloadReplacedClass {
			f.ErrorMessage = quotedPayload(f.ErrorMessage, allowPayloads)
		}
		f.ErrorMessage = cutChars(f.ErrorMessage, maxErrorChars)
		f.Backtrace = cutBacktrace(f.Backtrace)
		out[i] = f
	}
	return out, omitted
}

// payloadQuote starts the original payload in a payload-replaced record.
const payloadQuote = "Original payload: "

func quotedPayload(msg string, allowPayloads bool) string {
	head, orig, found := strings.Cut(msg, payloadQuote)
	if !found {
		return msg
	}
	if !allowPayloads {
		return head + payloadQuote + "[hidden: the server runs without --allow-payloads]"
	}
	red, _, ok := redact(json.RawMessage(orig))
	if !ok {
		return head + payloadQuote + "[hidden: cut short in the history, so secrets in it could not be redacted]"
	}
	return head + payloadQuote + string(red)
}

// readError turns an engine error into a resource error whose message says
// what to do. mcp-go reports resource errors as JSON-RPC errors carrying
// the message.
func readError(uri string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("resource %s: %s", uri, toolWords(err.Error()))
	case errors.Is(err, store.ErrInvalid):
		return fmt.Errorf("resource %s: %s", uri, toolWords(err.Error()))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("resource %s: the read was cancelled or timed out; try again", uri)
	}
	return fmt.Errorf("resource %s: pgbus could not read it (%v); this is a server-side problem, not a bad URI: check pgbus_health and try again later", uri, err)
}

// toolWords rewrites the CLI commands engine messages suggest into the MCP
// tools and resources that do the same.
var toolWords = strings.NewReplacer(
	"see pgbus dlq list --queue ", "see pgbus_dlq_list with queue ",
	"see pgbus dlq list", "see pgbus_dlq_list",
	"see pgbus queues", "read pgbus://queues",
).Replace

func jsonContents(uri string, v any) ([]mcp.ResourceContents, error) {
	b, err := marshalPlain(v)
	if err != nil {
		return nil, fmt.Errorf("resource %s: encode: %v", uri, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mimeJSON, Text: string(b)}}, nil
}
