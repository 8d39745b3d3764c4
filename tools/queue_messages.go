package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// QueueMessagesInput is the input of pgbus_queue_messages.
type QueueMessagesInput struct {
	Queue          string `json:"queue" jsonschema_description:"Queue name (orders)."`
	State          string `json:"state,omitempty" jsonschema:"enum=waiting,enum=in_flight,enum=retrying,enum=scheduled" jsonschema_description:"Only messages in this state: waiting (ready to run), in_flight (held by a worker), retrying (failed, waiting for the next attempt), scheduled (delayed or snoozed). Omit for all."`
	Cursor         string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same queue and state. Omit for the first page."`
	Limit          *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Messages per page: 1 to 100, default 25."`
	IncludePayload bool   `json:"include_payload,omitempty" jsonschema_description:"Return payloads too (up to 4 KB each). Shown only when the server runs with --allow-payloads; secrets are redacted."`
}

// LiveMessageView is one live message as pgbus_queue_messages returns it.
type LiveMessageView struct {
	Queue          string                `json:"queue"`
	MsgID          int64                 `json:"msg_id"`
	Kind           string                `json:"kind,omitempty"`
	State          string                `json:"state" jsonschema:"enum=waiting,enum=in_flight,enum=retrying,enum=scheduled"`
	ReadCount      int                   `json:"read_ct" jsonschema_description:"Attempts so far."`
	EnqueuedAt     time.Time             `json:"enqueued_at"`
	VisibleAt      time.Time             `json:"visible_at" jsonschema_description:"When the message is (or was) next ready to run."`
	Headers        json.RawMessage       `json:"headers,omitempty" jsonschema_description:"Headers, secrets redacted."`
	PayloadBytes   int                   `json:"payload_bytes"`
	PayloadShown   bool                  `json:"payload_shown"`
	Payload        json.RawMessage       `json:"payload,omitempty" jsonschema_description:"The payload, secrets redacted; only when payload_shown and not truncated."`
	PayloadPreview string                `json:"payload_preview,omitempty" jsonschema_description:"The start of a payload too large to return whole."`
	History        []store.FailureRecord `json:"history" jsonschema_description:"The newest failures (3 at most), oldest first, backtraces shortened."`
	FailureCount   int                   `json:"failure_count" jsonschema_description:"Failures recorded in all."`
}

// QueueMessagesOutput is the output of pgbus_queue_messages.
type QueueMessagesOutput struct {
	Items      []LiveMessageView `json:"items" jsonschema_description:"Live messages, oldest first."`
	NextCursor string            `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor, with the same queue and state, for the next page. Absent on the last page."`
	Notes      []string          `json:"notes" jsonschema_description:"What was hidden or shortened, and how to see it."`
}

const queueMessagesDescription = `Lists the live messages of a queue (not yet dead), oldest first, with their state (waiting, in_flight, retrying, scheduled), attempts so far and their latest failures.

Use it to see what is failing before it reaches the DLQ (state: retrying), what a stalled queue is holding (waiting), or what workers hold now (in_flight). Pages: pass next_cursor back as cursor; limit 1 to 100, default 25. Payloads only with include_payload and a server started with --allow-payloads. Next: pgbus_workers if nothing is in flight while messages wait; pgbus_queue_pause to stop a queue whose messages all fail.`

// Bounds of one live message's history in pgbus_queue_messages.
const (
	liveHistoryKeep = 3
	liveTraceLines  = 5
	liveTraceChars  = 1000
)

var liveStates = []string{store.StateWaiting, store.StateInFlight, store.StateRetrying, store.StateScheduled}

// NewQueueMessages returns the pgbus_queue_messages tool.
func NewQueueMessages(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_queue_messages", queueMessagesDescription, readAnnotations("Live messages of a queue"), QueueMessagesInput{}, QueueMessagesOutput{}),
		Handler: handler(func(ctx context.Context, in QueueMessagesInput) (QueueMessagesOutput, error) {
			if in.Queue == "" {
				return QueueMessagesOutput{}, fixf("queue is required: pass a queue name; pgbus_queue_stats lists them")
			}
			if in.State != "" && !slices.Contains(liveStates, in.State) {
				return QueueMessagesOutput{}, fixf("state %q is unknown; pass one of %s, or leave it out for all", shorten(in.State), strings.Join(liveStates, ", "))
			}
			limit, err := pageLimit(in.Limit)
			if err != nil {
				return QueueMessagesOutput{}, err
			}
			page, err := d.Admin.QueueMessages(ctx, store.LiveFilter{Queue: in.Queue, State: in.State}, in.Cursor, limit)
			if err != nil {
				return QueueMessagesOutput{}, err
			}
			return liveOutput(page, payloadPolicy{allowed: d.AllowPayloads, asked: in.IncludePayload}), nil
		}),
	}
}

func liveOutput(page store.LivePage, p payloadPolicy) QueueMessagesOutput {
	out := QueueMessagesOutput{Items: make([]LiveMessageView, 0, len(page.Items)), NextCursor: page.NextCursor, Notes: []string{}}
	more := "use the CLI for the whole message"
	var hidden, truncated, cut, omitted, redacted int
	var hiddenNote string
	for _, m := range page.Items {
		v := LiveMessageView{
			Queue: m.Queue, MsgID: m.MsgID, Kind: m.Kind, State: m.State, ReadCount: m.ReadCount,
			EnqueuedAt: m.EnqueuedAt, VisibleAt: m.VisibleAt, PayloadBytes: len(m.Payload), FailureCount: len(m.History),
		}
		var n int
		v.Headers, n, _ = viewHeaders(m.Headers, more)
		redacted += n
		pv := viewPayload(m.Payload, p, maxListPayloadShown, more)
		v.PayloadShown, v.Payload, v.PayloadPreview = pv.Shown, pv.Payload, pv.Preview
		redacted += pv.Redacted
		switch {
		case !pv.Shown:
			hidden++
			hiddenNote = pv.Note
		case pv.Truncated:
			truncated++
		}
		var o int
		var c bool
		v.History, o, c = boundFailures(m.History, liveHistoryKeep, liveTraceLines, liveTraceChars, p)
		if o > 0 {
			omitted++
		}
		if c {
			cut++
		}
		out.Items = append(out.Items, v)
	}
	if hidden > 0 && len(page.Items) > 0 {
		out.Notes = append(out.Notes, hiddenNote)
	}
	if truncated > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d payloads over %d bytes are truncated to payload_preview; %s", truncated, maxListPayloadShown, more))
	}
	if omitted > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d messages have more than %d failures; only the newest are listed (failure_count has the total)", omitted, liveHistoryKeep))
	}
	if cut > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("error messages and backtraces are shortened (backtraces to %d lines)", liveTraceLines))
	}
	if redacted > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d values under secret-looking keys are shown as %s", redacted, redactedValue))
	}
	return out
}
