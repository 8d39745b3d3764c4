package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/server"
)

// DLQPurgeInput is the input of pgbus_dlq_purge.
type DLQPurgeInput struct {
	Queue     string `json:"queue,omitempty" jsonschema_description:"Queue (orders) or DLQ (orders_dlq) whose discarded messages to purge. Omit for every DLQ."`
	OlderThan string `json:"older_than" jsonschema_description:"Purge only messages discarded longer ago than this age: a duration such as 72h, 30m or 7d; 0s purges every discarded message."`
	Confirm   bool   `json:"confirm,omitempty" jsonschema_description:"Must be true: purging deletes for good."`
}

// DLQPurgeOutput is the output of pgbus_dlq_purge.
type DLQPurgeOutput struct {
	Purged    int64  `json:"purged" jsonschema_description:"Discarded messages deleted for good, with their failure history."`
	Queue     string `json:"queue,omitempty" jsonschema_description:"The queue purged; absent for every DLQ."`
	OlderThan string `json:"older_than" jsonschema_description:"The age used."`
}

const dlqPurgeDescription = `Deletes for good the discarded dead messages (those pgbus_dlq_discard moved to a DLQ's archive) older than an age, with their failure history. Messages still in a DLQ are not touched. This cannot be undone.

Requires confirm: true. Check first what would go (pgbus_dlq_list for what is still dead, pgbus_audit for what was discarded and when), then call with queue (optional), older_than (e.g. 72h, 7d; 0s for all) and confirm: true.`

// NewDLQPurge returns the pgbus_dlq_purge tool.
func NewDLQPurge(d Deps) server.ServerTool {
	const name = "pgbus_dlq_purge"
	return server.ServerTool{
		Tool: newTool(name, dlqPurgeDescription, writeAnnotations("Purge discarded dead messages", true, false), DLQPurgeInput{}, DLQPurgeOutput{}),
		Handler: audited(d, name, handler(func(ctx context.Context, in DLQPurgeInput) (DLQPurgeOutput, error) {
			if in.OlderThan == "" {
				return DLQPurgeOutput{}, fixf("older_than is required: pass an age such as 72h or 7d (0s purges every discarded message)")
			}
			age, err := parseDuration(in.OlderThan)
			if err != nil || age < 0 {
				return DLQPurgeOutput{}, fixf("older_than %q is not an age; pass a duration such as 72h, 30m or 7d (0s for all)", shorten(in.OlderThan))
			}
			if !in.Confirm {
				where := "every DLQ"
				if in.Queue != "" {
					where = "queue " + in.Queue
				}
				return DLQPurgeOutput{}, fixf("purge deletes the discarded messages of %s older than %s for good: check first with pgbus_dlq_list (and pgbus_audit for what was discarded), then call again with confirm: true", where, in.OlderThan)
			}
			n, err := d.DLQ.Purge(ctx, in.Queue, age)
			if err != nil {
				return DLQPurgeOutput{}, err
			}
			return DLQPurgeOutput{Purged: n, Queue: in.Queue, OlderThan: fmt.Sprint(age)}, nil
		})),
	}
}
