package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/store"
)

// SendOptions are the optional parts of a message.
type SendOptions struct {
	// Kind selects the handler (the pgbus_kind header).
	Kind string
	// Delay postpones the first delivery.
	Delay time.Duration
	// Deadline is when the message stops being worth running: past it, it is
	// dead-lettered with reason deadline_exceeded instead of running.
	Deadline time.Time
	// IdempotencyKey is handed to the handler to pass downstream.
	IdempotencyKey string
	// Headers are extra headers; keys starting with pgbus_ are reserved.
	Headers map[string]any
}

// Send enqueues one message on a physical queue. payload is marshalled to
// JSON unless it already is JSON (json.RawMessage or []byte).
func (c *Client) Send(ctx context.Context, queue string, payload any, opts SendOptions) (int64, error) {
	m, err := NewMessage(payload, opts)
	if err != nil {
		return 0, err
	}
	return c.store.Send(ctx, queue, m)
}

// NewMessage builds the store message for a payload and options, checking
// them; the CLI and tools send through it too.
func NewMessage(payload any, opts SendOptions) (store.NewMessage, error) {
	var body []byte
	switch p := payload.(type) {
	case json.RawMessage:
		body = p
	case []byte: // raw JSON, not a byte string to base64
		body = p
	default:
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return store.NewMessage{}, fmt.Errorf("%w: payload does not marshal to JSON: %v", store.ErrInvalid, err)
		}
	}
	headers := make(map[string]any, len(opts.Headers)+3)
	for k, v := range opts.Headers {
		if len(k) >= 6 && k[:6] == "pgbus_" {
			return store.NewMessage{}, fmt.Errorf("%w: header %q: keys starting with pgbus_ are reserved; use SendOptions fields instead", store.ErrInvalid, k)
		}
		headers[k] = v
	}
	if opts.Kind != "" {
		headers[store.HeaderKind] = opts.Kind
	}
	if !opts.Deadline.IsZero() {
		headers[store.HeaderDeadline] = opts.Deadline.UTC().Format(time.RFC3339Nano)
	}
	if opts.IdempotencyKey != "" {
		headers[store.HeaderIdempotencyKey] = opts.IdempotencyKey
	}
	m := store.NewMessage{Payload: body, Delay: opts.Delay, IdempotencyKey: opts.IdempotencyKey}
	if len(headers) > 0 {
		h, err := json.Marshal(headers)
		if err != nil {
			return store.NewMessage{}, fmt.Errorf("%w: headers do not marshal to JSON: %v", store.ErrInvalid, err)
		}
		m.Headers = h
	}
	return m, nil
}
