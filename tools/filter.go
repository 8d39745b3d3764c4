package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// DeadFilter selects dead messages; the DLQ tools share it, so the
// arguments of a pgbus_dlq_list call select the same messages in
// pgbus_dlq_retry or pgbus_dlq_discard.
type DeadFilter struct {
	Queue      string `json:"queue,omitempty" jsonschema_description:"Source queue (orders) or its DLQ (orders_dlq). Omit for every DLQ."`
	Kind       string `json:"kind,omitempty" jsonschema_description:"Job kind (the pgbus_kind header) exactly as pgbus_dlq_summary shows it."`
	ErrorClass string `json:"error_class,omitempty" jsonschema_description:"Error class of the last failure exactly as pgbus_dlq_summary shows it."`
	Reason     string `json:"reason,omitempty" jsonschema:"enum=max_retries_exceeded,enum=non_retryable_error,enum=deadline_exceeded" jsonschema_description:"Why the message was dead-lettered."`
	Since      string `json:"since,omitempty" jsonschema_description:"Only messages dead-lettered at or after this time: RFC 3339 (2025-01-31T09:00:00Z) or an age such as 90m, 24h or 7d."`
	Until      string `json:"until,omitempty" jsonschema_description:"Only messages dead-lettered before this time: RFC 3339 or an age such as 1h."`
	Text       string `json:"text,omitempty" jsonschema_description:"Case-insensitive text to find in the last error message."`
}

// relative reports whether since or until is an age, which depends on
// when the call is made.
func (f DeadFilter) relative() bool {
	for _, s := range []string{f.Since, f.Until} {
		if _, err := time.Parse(time.RFC3339Nano, s); s != "" && err != nil {
			return true
		}
	}
	return false
}

// toStore checks the filter and converts it, ages counting back from now.
func (f DeadFilter) toStore(now time.Time) (store.DeadFilter, error) {
	out := store.DeadFilter{Queue: f.Queue, Kind: f.Kind, ErrorClass: f.ErrorClass, Reason: f.Reason, Text: f.Text}
	if f.Reason != "" && !slices.Contains(reasons, f.Reason) {
		return out, fixf("reason %q is unknown; pass one of %s, or leave it out", shorten(f.Reason), strings.Join(reasons, ", "))
	}
	var err error
	if out.Since, err = parseTime("since", f.Since, now); err != nil {
		return out, err
	}
	if out.Until, err = parseTime("until", f.Until, now); err != nil {
		return out, err
	}
	return out, nil
}

// onlyQueue reports whether the filter sets nothing but queue.
func (f DeadFilter) onlyQueue() bool {
	return f == DeadFilter{Queue: f.Queue}
}

var reasons = []string{store.ReasonMaxRetriesExceeded, store.ReasonNonRetryable, store.ReasonDeadlineExceeded}

// idTarget is a set of dead message ids in one DLQ.
type idTarget struct {
	dlq string
	ids []int64
}

// checkIDs validates the ids of a retry or discard call.
func checkIDs(ids []int64) error {
	if len(ids) > maxIDs {
		return fixf("ids holds %d ids; at most %d are allowed per call: pass a filter with a limit instead, or split the ids", len(ids), maxIDs)
	}
	for _, id := range ids {
		if id <= 0 {
			return fixf("ids: %d is not a message id; ids are positive integers as pgbus_dlq_list shows them (msg_id)", id)
		}
	}
	return nil
}

// uniqueIDs drops repeated ids, keeping the first of each.
func uniqueIDs(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// locateIDs finds the DLQ of each id: queue's when given, else the one DLQ
// holding it. An id in several DLQs, or in none, is an error that says what
// to do. Ids are grouped by DLQ, in first-seen order.
func locateIDs(ctx context.Context, dlq *engine.DLQ, queue string, ids []int64) ([]idTarget, error) {
	if queue != "" {
		return []idTarget{{dlq: queue, ids: ids}}, nil
	}
	var out []idTarget
	index := map[string]int{}
	for _, id := range ids {
		name, err := dlq.Locate(ctx, "", id)
		if err != nil {
			if len(ids) > 1 {
				return nil, fmt.Errorf("%w (while locating id %d of %d: pass queue when all ids are in one DLQ)", err, id, len(ids))
			}
			return nil, err
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, idTarget{dlq: name})
		}
		out[i].ids = append(out[i].ids, id)
	}
	return out, nil
}

// baseQueue returns the queue a DLQ belongs to.
func baseQueue(dlq string) string { return strings.TrimSuffix(dlq, store.DLQSuffix) }

// cliShow is the CLI command that shows a dead message whole.
func cliShow(dlq string, id int64) string {
	return fmt.Sprintf("use the CLI: pgbus dlq show --queue %s %d", baseQueue(dlq), id)
}
