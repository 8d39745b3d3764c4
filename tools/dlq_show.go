package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// DLQShowInput is the input of pgbus_dlq_show.
type DLQShowInput struct {
	Queue          string `json:"queue,omitempty" jsonschema_description:"The message's DLQ (orders_dlq) or its queue (orders), as pgbus_dlq_list shows it in dlq. May be omitted when only one DLQ holds msg_id."`
	MsgID          int64  `json:"msg_id" jsonschema:"minimum=1" jsonschema_description:"The dead message's id in its DLQ (msg_id in pgbus_dlq_list, sample_msg_ids in pgbus_dlq_summary)."`
	IncludePayload bool   `json:"include_payload,omitempty" jsonschema_description:"Return the payload too. Shown only when the server runs with --allow-payloads; values under keys such as password, token, secret or authorization are redacted."`
}

// DLQShowOutput is the output of pgbus_dlq_show.
type DLQShowOutput struct {
	DLQ            string                 `json:"dlq" jsonschema_description:"The DLQ holding the message."`
	Queue          string                 `json:"queue" jsonschema_description:"The queue the DLQ belongs to."`
	MsgID          int64                  `json:"msg_id"`
	Kind           string                 `json:"kind,omitempty"`
	ReadCount      int                    `json:"read_ct" jsonschema_description:"Reads in the DLQ (by pgmq clients); not the attempts, which are in dead_letter."`
	DeadLetteredAt time.Time              `json:"dead_lettered_at"`
	DeadLetter     *store.DeadLetterBlock `json:"dead_letter,omitempty" jsonschema_description:"Why and when the message died: reason, source queue and id, attempts, and the last error with its backtrace. Absent for a message put in the DLQ by another client."`
	Headers        json.RawMessage        `json:"headers,omitempty" jsonschema_description:"The message's headers without the dead-letter block, secrets redacted."`
	PayloadBytes   int                    `json:"payload_bytes" jsonschema_description:"Size of the stored payload as JSON."`
	PayloadShown   bool                   `json:"payload_shown" jsonschema_description:"Whether payload (or, when truncated, payload_preview) holds the payload."`
	Payload        json.RawMessage        `json:"payload,omitempty" jsonschema_description:"The payload with secrets redacted; present only when payload_shown and not truncated."`
	PayloadPreview string                 `json:"payload_preview,omitempty" jsonschema_description:"The start of a payload too large to return whole, as JSON text."`
	RedactedValues int                    `json:"redacted_values,omitempty" jsonschema_description:"Values replaced by [REDACTED] in payload and headers."`
	History        []store.FailureRecord  `json:"history" jsonschema_description:"Recorded failures, oldest first (the newest 20 at most), error messages and backtraces shortened."`
	HistoryOmitted int                    `json:"history_omitted,omitempty" jsonschema_description:"Older failures left out."`
	Notes          []string               `json:"notes" jsonschema_description:"What was hidden or shortened, and how to see it."`
}

const dlqShowDescription = `One dead message in full: the dead-letter block (reason, source queue, attempts, last error class, message and backtrace), headers, the failure history of its attempts, and, when allowed, the payload.

Use it after pgbus_dlq_summary or pgbus_dlq_list to understand why a message died. queue may be omitted when only one DLQ holds msg_id; otherwise the error lists the DLQs to choose from. Payloads are hidden unless the server runs with --allow-payloads and include_payload is true; secrets stay redacted; large payloads and long backtraces are shortened with a note. Next: pgbus_dlq_retry (ids: [msg_id], and a corrected payload when the data was wrong) or pgbus_dlq_discard.`

// Bounds of pgbus_dlq_show's failure history.
const showHistoryKeep = 20

// NewDLQShow returns the pgbus_dlq_show tool.
func NewDLQShow(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_dlq_show", dlqShowDescription, readAnnotations("Show a dead message"), DLQShowInput{}, DLQShowOutput{}),
		Handler: handler(func(ctx context.Context, in DLQShowInput) (DLQShowOutput, error) {
			if in.MsgID <= 0 {
				return DLQShowOutput{}, fixf("msg_id is required: pass the id of a dead message as pgbus_dlq_list shows it (a positive integer)")
			}
			dlq, err := d.DLQ.Locate(ctx, in.Queue, in.MsgID)
			if err != nil {
				return DLQShowOutput{}, err
			}
			m, err := d.DLQ.Show(ctx, dlq, in.MsgID)
			if err != nil {
				return DLQShowOutput{}, err
			}
			return showOutput(m, payloadPolicy{allowed: d.AllowPayloads, asked: in.IncludePayload}), nil
		}),
	}
}

func showOutput(m store.DeadMessage, p payloadPolicy) DLQShowOutput {
	more := cliShow(m.DLQ, m.MsgID)
	out := DLQShowOutput{
		DLQ: m.DLQ, Queue: baseQueue(m.DLQ), MsgID: m.MsgID, Kind: m.Kind, ReadCount: m.ReadCount,
		DeadLetteredAt: m.DeadLetteredAt, PayloadBytes: len(m.Payload), Notes: []string{},
	}
	if m.Block != nil {
		b := *m.Block
		var cut bool
		if b.Backtrace, cut = shortBacktrace(b.Backtrace, maxBacktraceLines, maxBacktraceChars); cut {
			out.Notes = append(out.Notes, "dead_letter.backtrace shortened; the failure history has the recorded backtraces, and "+more+" shows them whole")
		}
		out.DeadLetter = &b
	}
	headers, n, note := viewHeaders(m.Headers, more)
	out.Headers, out.RedactedValues = headers, n
	if note != "" {
		out.Notes = append(out.Notes, note)
	}
	pv := viewPayload(m.Payload, p, maxPayloadShown, more)
	out.PayloadShown, out.Payload, out.PayloadPreview = pv.Shown, pv.Payload, pv.Preview
	out.RedactedValues += pv.Redacted
	if pv.Note != "" {
		out.Notes = append(out.Notes, pv.Note)
	}
	var cut bool
	out.History, out.HistoryOmitted, cut = boundFailures(m.History, showHistoryKeep, maxBacktraceLines, maxBacktraceChars, p)
	if out.HistoryOmitted > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("history: the %d oldest failures are left out; %s", out.HistoryOmitted, more))
	}
	if cut {
		out.Notes = append(out.Notes, fmt.Sprintf("history: error messages over %d characters and backtraces over %d lines or %d characters are shortened; %s", maxErrorMessageChars, maxBacktraceLines, maxBacktraceChars, more))
	}
	if out.RedactedValues > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d values under secret-looking keys (password, token, secret, authorization, ...) are shown as %s", out.RedactedValues, redactedValue))
	}
	return out
}
