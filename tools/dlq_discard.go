package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// DLQDiscardInput is the input of pgbus_dlq_discard.
type DLQDiscardInput struct {
	IDs []int64 `json:"ids,omitempty" jsonschema:"maxItems=100" jsonschema_description:"Dead message ids to discard (msg_id in pgbus_dlq_list), at most 100. With ids, queue may name their DLQ; other filters are not allowed."`
	DeadFilter
	Limit *int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"Required with filters: the most messages to discard, oldest first (1 to 1000). Not used with ids."`
}

// DLQDiscardOutput is the output of pgbus_dlq_discard.
type DLQDiscardOutput struct {
	Discarded int    `json:"discarded" jsonschema_description:"Messages moved to their DLQ's archive."`
	Next      string `json:"next" jsonschema_description:"What to do next."`
}

const dlqDiscardDescription = `Discards dead messages: moves them out of their DLQ into the DLQ's archive, where they are kept (recoverable by an operator) until pgbus_dlq_purge deletes them. Nothing runs again.

Use it for messages that will never succeed (bad input, non_retryable_error, unknown kinds) after reading one with pgbus_dlq_show. Either ids (at most 100; add queue when an id is in several DLQs) or filters as in pgbus_dlq_list (queue, kind, error_class, reason, since, until, text) with a required limit (1 to 1000, oldest first). Next: pgbus_dlq_summary to see what is left.`

// NewDLQDiscard returns the pgbus_dlq_discard tool.
func NewDLQDiscard(d Deps) server.ServerTool {
	const name = "pgbus_dlq_discard"
	return server.ServerTool{
		Tool: newTool(name, dlqDiscardDescription, writeAnnotations("Discard dead messages", true, false), DLQDiscardInput{}, DLQDiscardOutput{}),
		Handler: audited(d, name, handler(func(ctx context.Context, in DLQDiscardInput) (DLQDiscardOutput, error) {
			in.IDs = uniqueIDs(in.IDs)
			n, byFilter, limit, err := discard(ctx, d, in)
			if err != nil {
				return DLQDiscardOutput{}, err
			}
			next := fmt.Sprintf("%d messages moved to their DLQ's archive; they stay there until pgbus_dlq_purge. See what is left with pgbus_dlq_summary.", n)
			if missing := len(in.IDs) - n; len(in.IDs) > 0 && missing > 0 {
				next += fmt.Sprintf(" %d of the ids were not in their DLQ: retried or discarded already (pgbus_dlq_list shows what is still dead).", missing)
			}
			if byFilter && n >= limit {
				next += " The limit was reached, so more messages may match: call again to discard the next ones."
			}
			return DLQDiscardOutput{Discarded: n, Next: next}, nil
		})),
	}
}

func discard(ctx context.Context, d Deps, in DLQDiscardInput) (n int, byFilter bool, limit int, err error) {
	if len(in.IDs) > 0 {
		if err := checkByIDs(in.IDs, in.DeadFilter, in.Limit, "discard"); err != nil {
			return 0, false, 0, err
		}
		targets, err := locateIDs(ctx, d.DLQ, in.Queue, in.IDs)
		if err != nil {
			return 0, false, 0, err
		}
		for _, t := range targets {
			k, err := d.DLQ.Discard(ctx, t.dlq, t.ids)
			n += k
			if err != nil {
				return n, false, 0, err
			}
		}
		return n, false, 0, nil
	}
	if limit, err = bulkLimit(in.DeadFilter, in.Limit, "discard"); err != nil {
		return 0, true, 0, err
	}
	f, err := in.toStore(time.Now())
	if err != nil {
		return 0, true, 0, err
	}
	n, err = d.DLQ.DiscardMatching(ctx, f, limit)
	return n, true, limit, err
}
