package engine

import (
	"context"
	"maps"
)

// SendObserver is an Observer that also watches sends, as a tracer does to
// carry a trace from the sender to the attempts. Client.Send calls Sending
// before the message is built, with a copy of the options whose Headers it
// may add to (keys starting with pgbus_ are reserved), and calls the
// function it returns with the new message's id or the error.
type SendObserver interface {
	Observer
	Sending(ctx context.Context, queue string, opts *SendOptions) (done func(id int64, err error))
}

// observeSend lets the client's SendObservers see a send; with none it
// returns opts as they are and a done that does nothing.
func (c *Client) observeSend(ctx context.Context, queue string, opts SendOptions) (SendOptions, func(int64, error)) {
	var dones []func(int64, error)
	copied := false
	for _, o := range c.observers.list {
		so, ok := o.(SendObserver)
		if !ok {
			continue
		}
		if !copied {
			opts.Headers = maps.Clone(opts.Headers)
			if opts.Headers == nil {
				opts.Headers = map[string]any{}
			}
			copied = true
		}
		if done := so.Sending(ctx, queue, &opts); done != nil {
			dones = append(dones, done)
		}
	}
	return opts, func(id int64, err error) {
		for _, done := range dones {
			done(id, err)
		}
	}
}
