package tools

import (
	"github.com/pgbus/pgbus/ops"
)

// DeadFilter selects dead messages; the DLQ tools share it, so the
// arguments of a pgbus_dlq_list call select the same messages in
// pgbus_dlq_retry or pgbus_dlq_discard.
type DeadFilter struct {
	Queue      string `json:"queue,omitempty" jsonschema_description:"Source queue (orders) or its DLQ (orders_dlq). Omit for every DLQ."`
	Kind       string `json:"kind,omitempty" jsonschema_description:"Job kind (the pgbus_kind header) exactly as pgbus_dlq_summary shows it. Omit for every kind; messages without a kind cannot be selected alone."`
	ErrorClass string `json:"error_class,omitempty" jsonschema_description:"Error class of the last failure exactly as pgbus_dlq_summary shows it."`
	Reason     string `json:"reason,omitempty" jsonschema:"enum=max_retries_exceeded,enum=non_retryable_error,enum=deadline_exceeded,enum=not_recorded" jsonschema_description:"Why the message was dead-lettered; not_recorded selects the messages without a dead-letter block."`
	Since      string `json:"since,omitempty" jsonschema_description:"Only messages dead-lettered at or after this time: RFC 3339 (2025-01-31T09:00:00Z), a date (2025-01-31, midnight UTC) or an age such as 90m, 24h or 7d."`
	Until      string `json:"until,omitempty" jsonschema_description:"Only messages dead-lettered before this time: RFC 3339, a date (midnight UTC), or an age such as 1h."`
	Text       string `json:"text,omitempty" jsonschema_description:"Case-insensitive text to find in the last error message."`
	Group      string `json:"group,omitempty" jsonschema_description:"A group's key from pgbus_dlq_summary (its group field): exactly that group's messages, where kind and error_class select every group that shares them. A retry or discard by a key that groups in several DLQs share needs queue as well."`
}

// ops converts the filter; the fields are the operations layer's.
func (f DeadFilter) ops() ops.DeadFilter { return ops.DeadFilter(f) }
