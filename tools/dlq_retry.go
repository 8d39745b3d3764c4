package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// maxBulk bounds the limit of one retry or discard by filter.
const maxBulk = 1000

// DLQRetryInput is the input of pgbus_dlq_retry.
type DLQRetryInput struct {
	IDs []int64 `json:"ids,omitempty" jsonschema:"maxItems=100" jsonschema_description:"Dead message ids to retry (msg_id in pgbus_dlq_list), at most 100. With ids, queue may name their DLQ; other filters are not allowed."`
	DeadFilter
	Limit   *int            `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"Required with filters: the most messages to retry, oldest first (1 to 1000). Not used with ids."`
	DryRun  bool            `json:"dry_run,omitempty" jsonschema_description:"Report what would be retried, and where to, without moving anything."`
	Payload json.RawMessage `json:"payload,omitempty" jsonschema_description:"A corrected payload (any JSON) to retry one message with, instead of its own: only with exactly one id. The original message is kept in the DLQ's archive and noted in its failure history."`
}

// DLQRetryOutput is the output of pgbus_dlq_retry.
type DLQRetryOutput struct {
	store.RetryReport
	Next string `json:"next" jsonschema_description:"What to do next."`
}

const dlqRetryDescription = `Retries dead messages: moves them out of their DLQ back to the queue they died in, where workers run them again (attempts start over; the failure history goes with them). Each message moves in its own transaction; one failing does not stop the rest (retried, failed, first_error).

Either ids (at most 100; add queue when an id is in several DLQs) or filters as in pgbus_dlq_list (queue, kind, error_class, reason, since, until, text) with a required limit (1 to 1000, oldest first). Retry only after the cause is fixed or was transient (timeouts, 503s); for bad input that will never succeed use pgbus_dlq_discard, or retry one message with a corrected payload (payload, exactly one id). Use dry_run: true first to see what would move. Next: pgbus_queue_stats or pgbus_queue_messages to watch the retried messages; pgbus_dlq_summary to see what is left.`

// NewDLQRetry returns the pgbus_dlq_retry tool.
func NewDLQRetry(d Deps) server.ServerTool {
	const name = "pgbus_dlq_retry"
	return server.ServerTool{
		Tool: newTool(name, dlqRetryDescription, writeAnnotations("Retry dead messages", false, false), DLQRetryInput{}, DLQRetryOutput{}),
		Handler: audited(d, name, handler(func(ctx context.Context, in DLQRetryInput) (DLQRetryOutput, error) {
			return retry(ctx, d, in)
		})),
	}
}

func retry(ctx context.Context, d Deps, in DLQRetryInput) (DLQRetryOutput, error) {
	if string(in.Payload) == "null" {
		in.Payload = nil // an unset optional argument, as some clients send it
	}
	if len(in.Payload) > maxCorrectedPayloadBytes {
		return DLQRetryOutput{}, fixf("payload is %d bytes; at most %d are allowed over MCP: use the CLI for larger corrections", len(in.Payload), maxCorrectedPayloadBytes)
	}
	opts := store.RetryOptions{DryRun: in.DryRun, Payload: in.Payload, Progress: progressReporter(ctx)}
	if len(in.IDs) > 0 {
		in.IDs = uniqueIDs(in.IDs)
		if err := checkByIDs(in.IDs, in.DeadFilter, in.Limit, "retry"); err != nil {
			return DLQRetryOutput{}, err
		}
		if len(in.Payload) > 0 && len(in.IDs) != 1 {
			return DLQRetryOutput{}, fixf("payload (a corrected payload) applies to exactly one message, and ids holds %d: retry that one message alone with its corrected payload", len(in.IDs))
		}
		targets, err := locateIDs(ctx, d.DLQ, in.Queue, in.IDs)
		if err != nil {
			return DLQRetryOutput{}, err
		}
		rep := store.RetryReport{DryRun: in.DryRun, Moved: []store.RetriedMessage{}}
		for _, t := range targets {
			r, err := d.DLQ.Retry(ctx, t.dlq, t.ids, opts)
			if err != nil && !(len(targets) > 1 && r.Failed > 0) {
				if rep.Retried > 0 {
					err = fmt.Errorf("%w (%d messages of other DLQs were retried before this error; pgbus_audit and pgbus_dlq_list show the state)", err, rep.Retried)
				}
				return DLQRetryOutput{}, err
			}
			rep.Merge(r)
		}
		return DLQRetryOutput{RetryReport: rep, Next: retryNext(rep, false, 0)}, nil
	}
	if len(in.Payload) > 0 {
		return DLQRetryOutput{}, fixf("payload (a corrected payload) applies to exactly one message: pass ids with that message's id instead of filters")
	}
	limit, err := bulkLimit(in.DeadFilter, in.Limit, "retry")
	if err != nil {
		return DLQRetryOutput{}, err
	}
	f, err := in.toStore(time.Now())
	if err != nil {
		return DLQRetryOutput{}, err
	}
	rep, err := d.DLQ.RetryMatching(ctx, f, limit, opts)
	if err != nil {
		return DLQRetryOutput{}, err
	}
	return DLQRetryOutput{RetryReport: rep, Next: retryNext(rep, true, limit)}, nil
}

// checkByIDs checks the arguments of a call by ids.
func checkByIDs(ids []int64, f DeadFilter, limit *int, op string) error {
	if !f.onlyQueue() {
		return fixf("pass either ids (with queue at most) or filters with a limit, not both: drop kind, error_class, reason, since, until and text, or drop ids to %s by filter", op)
	}
	if limit != nil {
		return fixf("limit applies to filters; with ids every listed message is handled: drop limit")
	}
	return checkIDs(ids)
}

// bulkLimit checks the filter and limit of a call by filter.
func bulkLimit(f DeadFilter, limit *int, op string) (int, error) {
	if f == (DeadFilter{}) {
		return 0, fixf("pass ids, or filters (queue, kind, error_class, reason, since, until, text) with a limit, to choose what to %s; pgbus_dlq_summary shows the groups there are", op)
	}
	if limit == nil {
		return 0, fixf("limit is required with filters: pass the most messages to %s (1 to %d); pgbus_dlq_list with the same filters shows what matches", op, maxBulk)
	}
	if *limit < 1 || *limit > maxBulk {
		return 0, fixf("limit %d is out of range; pass 1 to %d, and call again for more", *limit, maxBulk)
	}
	return *limit, nil
}

func retryNext(rep store.RetryReport, byFilter bool, limit int) string {
	var s string
	switch {
	case rep.DryRun && rep.Retried == 0:
		s = "dry run: nothing would be retried; check the filters with pgbus_dlq_list."
	case rep.DryRun:
		s = fmt.Sprintf("dry run: nothing moved; %d messages would go back to the queues listed in moved. Call again without dry_run to retry them.", rep.Retried)
	case rep.Retried == 0:
		s = "nothing was retried."
	default:
		s = fmt.Sprintf("%d messages are back in their queues and will run again; watch them with pgbus_queue_stats or pgbus_queue_messages (state: retrying). If they fail again they return to the DLQ.", rep.Retried)
	}
	if rep.Failed > 0 {
		s += fmt.Sprintf(" %d could not be retried: first_error says why; pgbus_dlq_list shows what is still dead.", rep.Failed)
	}
	if byFilter && rep.Retried+rep.Failed >= limit {
		s += " The limit was reached, so more messages may match: call again to handle the next ones."
	}
	return s
}
