package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// maxBulk bounds the limit of one retry or discard by filter over MCP.
const maxBulk = 1000

// maxCorrectedPayloadBytes bounds pgbus_dlq_retry's payload.
const maxCorrectedPayloadBytes = 256 << 10

// DLQRetryInput is the input of pgbus_dlq_retry.
type DLQRetryInput struct {
	IDs []int64 `json:"ids,omitempty" jsonschema:"minItems=1,maxItems=100" jsonschema_description:"Dead message ids to retry (msg_id in pgbus_dlq_list), at most 100. With ids, queue may name their DLQ; other filters are not allowed."`
	DeadFilter
	Limit         *int            `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"Required with filters: the most messages to retry, oldest first (1 to 1000). Not used with ids."`
	DryRun        bool            `json:"dry_run,omitempty" jsonschema_description:"Report what would be retried, and where to, without moving anything; by filter it also returns expect."`
	Expect        string          `json:"expect,omitempty" jsonschema_description:"With filters: the expect of the dry run, or the ids it listed separated by commas (with queue). The call then retries exactly that set or nothing."`
	Payload       json.RawMessage `json:"payload,omitempty" jsonschema_description:"A corrected payload to retry one message with, instead of its own: only with exactly one id. Pass the JSON itself, of the stored payload's type: an object as an object, not a string holding it. One of another type (a string or a number for an object, ...) is refused, since the job would fail on it again. null is the same as leaving it out: the stored payload is kept. The original message is kept in the DLQ's archive and noted in its failure history. A payload still holding [REDACTED], as pgbus_dlq_show shows hidden secrets, is refused: put the real values back. So is one holding the \"…[shortened: \" marks of a payload_preview: give every value in full."`
	ClearDeadline bool            `json:"clear_deadline,omitempty" jsonschema_description:"Remove the deadline (pgbus_deadline header) of the messages retried, so that they run however late it is. Without it a message whose deadline has passed is not moved (a worker would dead-letter it again without running it) and fails, saying so."`
	Rate          *float64        `json:"rate,omitempty" jsonschema:"exclusiveMinimum=0,maximum=10000" jsonschema_description:"Messages a second: the retried messages become visible to workers one after another at this rate (0.5: one every 2 seconds; 0.0167, one a minute, at the least, and fast enough for limit messages to take at most 7 days) instead of all at once, so that a downstream that just recovered is not met with the whole DLQ and new messages run between them. visible_until says when the last one is. Omit for all at once."`
}

const dlqRetryDescription = `Retries dead messages: moves them out of their DLQ back to the queue they died in, where workers run them again (attempts start over; the failure history goes with them). Messages move a batch to a transaction (with expect: all in one); one failing does not stop the rest. By ids, outcomes has one entry per id: retried, not_found (retried or discarded already), ambiguous (in several DLQs: pass queue) or failed with its error.

Either ids (at most 100; add queue when an id is in several DLQs) or the filters of pgbus_dlq_list with a required limit (1 to 1000, oldest first). A message whose deadline has passed (reason deadline_exceeded, or died later) is not moved unless clear_deadline is set. Retry only after the cause is fixed or was transient (timeouts, 503s); for bad input that will never succeed use pgbus_dlq_discard, or retry one message with a corrected payload (payload, exactly one id). By filter, call with dry_run: true first, then pass its expect: if what the filter selects changed meanwhile, the call is refused and nothing moves. Next: pgbus_queue_stats or pgbus_queue_messages to watch the retried messages; pgbus_dlq_summary to see what is left.`

func dlqRetryTool() mcp.Tool {
	return newTool("pgbus_dlq_retry", dlqRetryDescription, writeAnnotations("Retry dead messages", false, false), DLQRetryInput{}, ops.DLQRetry{})
}

// NewDLQRetry returns the pgbus_dlq_retry tool.
func NewDLQRetry(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: dlqRetryTool(),
		Handler: handler(d, func(ctx context.Context, in DLQRetryInput) (ops.DLQRetry, error) {
			req, err := in.request()
			if err != nil {
				return ops.DLQRetry{}, err
			}
			req.Progress = progressReporter(ctx)
			return d.Ops.DLQRetry(ctx, req)
		}),
	}
}

// request is the retry the arguments ask for.
func (in DLQRetryInput) request() (ops.DLQRetryRequest, error) {
	if string(bytes.TrimSpace(in.Payload)) == "null" {
		in.Payload = nil // a JSON argument given as null is an argument not given
	}
	if len(in.Payload) > maxCorrectedPayloadBytes {
		return ops.DLQRetryRequest{}, payloadTooLarge(len(in.Payload), in.IDs, in.Queue)
	}
	req := ops.DLQRetryRequest{IDs: in.IDs, Filter: in.ops(), DryRun: in.DryRun, Payload: in.Payload, Expect: in.Expect,
		ClearDeadline: in.ClearDeadline}
	if in.Rate != nil {
		if err := ops.CheckGivenRate(*in.Rate); err != nil {
			return ops.DLQRetryRequest{}, err
		}
		req.Rate = *in.Rate
	}
	if err := checkIDsGiven(in.IDs, in.DeadFilter, "retry"); err != nil {
		return ops.DLQRetryRequest{}, err
	}
	if len(in.IDs) == 0 {
		limit, err := bulkLimit(in.DeadFilter, in.Limit, "retry")
		if err != nil {
			return ops.DLQRetryRequest{}, err
		}
		req.Limit = limit
	} else if in.Limit != nil {
		req.Limit = *in.Limit // rejected with ids
	}
	return req, nil
}

// largeArguments refuses arguments over the cap of a call that a
// corrected payload makes large, saying how to retry with it from a file.
func (*DLQRetryInput) largeArguments(raw []byte) error {
	var args struct {
		IDs     []int64  `json:"ids"`
		Queue   string   `json:"queue"`
		Payload jsonSize `json:"payload"`
	}
	_ = json.Unmarshal(raw, &args) // what can be read of them; the payload only by its size
	if int(args.Payload) <= maxCorrectedPayloadBytes {
		return nil
	}
	return payloadTooLarge(int(args.Payload), args.IDs, args.Queue)
}

// payloadTooLarge is the error of a corrected payload of size bytes, more
// than a tool call takes, for a retry of ids in queue: an operator can
// retry with it from a file, with the command it names; one more than a
// message may carry cannot be retried with at all. It never quotes the
// payload.
func payloadTooLarge(size int, ids []int64, queue string) error {
	if size > ops.MaxCorrectedPayloadBytes {
		return fixf("payload is %d bytes, more than the %d a message may carry: nothing was retried; keep large data elsewhere and put a reference to it in the payload", size, ops.MaxCorrectedPayloadBytes)
	}
	// A corrected payload replaces that of one message: the id, or a
	// place for it.
	args := map[string]any{"ids": "ID", "payload": "@payload.json"}
	if len(ids) == 1 && ids[0] > 0 {
		args["ids"] = ids
	}
	if queue != "" && ops.CheckQueueName(queue) == nil {
		args["queue"] = queue
	}
	return &callError{
		msg: fmt.Sprintf("payload is %d bytes, too large for a tool call, which takes a corrected payload of at most %d bytes: nothing was retried. "+
			"Write the corrected payload to a file, payload.json, and ask an operator to retry with it on the command line", size, maxCorrectedPayloadBytes),
		operator: []ops.Hint{{Op: ops.OpDLQRetry, Args: args, Why: "retries the message with the corrected payload read from payload.json, which a tool call cannot carry"}},
	}
}

// listArgs are f's fields that are set, as pgbus_dlq_list's arguments.
func listArgs(f DeadFilter) map[string]any {
	args := map[string]any{}
	for k, v := range map[string]string{"queue": f.Queue, "kind": f.Kind, "error_class": f.ErrorClass, "reason": f.Reason,
		"since": f.Since, "until": f.Until, "text": f.Text, "group": f.Group} {
		if v != "" {
			args[k] = v
		}
	}
	return args
}

// checkIDsGiven refuses ids given as an empty array: a list of ids that
// came out empty selects no message, and read as no ids it would have
// selected by the filters beside it, a whole DLQ with queue alone.
func checkIDsGiven(ids []int64, f DeadFilter, op string) error {
	if ids == nil || len(ids) > 0 {
		return nil
	}
	next := []ops.Hint{{Op: ops.OpDLQSummary, Why: "shows the groups there are, each with the filter that selects it"}}
	if f != (DeadFilter{}) {
		next = []ops.Hint{{Op: ops.OpDLQList, Args: listArgs(f), Why: "shows what the filters match"}}
	}
	return fixNext(next, "ids is empty: there is nothing to %s; to %s by filters instead, leave ids out and pass a limit", op, op)
}

// bulkLimit checks the filter and limit of a call by filter: over MCP both
// are required, so that an agent always says how much it moves.
func bulkLimit(f DeadFilter, limit *int, op string) (int, error) {
	if f == (DeadFilter{}) {
		return 0, fixNext([]ops.Hint{{Op: ops.OpDLQSummary, Why: "shows the groups there are, each with the filter that selects it"}},
			"pass ids, or filters (queue, kind, error_class, reason, since, until, text, group) with a limit, to choose what to %s; pgbus_dlq_summary shows the groups there are", op)
	}
	if limit == nil {
		return 0, fixNext([]ops.Hint{{Op: ops.OpDLQList, Args: listArgs(f), Why: "shows what the filters match"}},
			"limit is required with filters: pass the most messages to %s (1 to %d); pgbus_dlq_list with the same filters shows what matches", op, maxBulk)
	}
	return *limit, ops.CheckBulkLimit(*limit, maxBulk)
}
