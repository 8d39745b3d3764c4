package engine

import (
	"context"
	"maps"
)

// SendObserver is an Observer that also watches sends, as a tracer does to
// carry a trace from the sender to the attempts. Client.Send calls Sending
// before the message is built, with a copy of the options whose Headers it
// may add to (keys starting with pgbus_ are reserved), and calls the
// function it returns with the new message's id or the error. Both run on
// the sender's goroutine; one that panics is logged as an Observer's method
// is, and the send goes on without it.
type SendObserver interface {
	Observer
	Sending(ctx context.Context, queue string, opts *SendOptions) (done func(id int64, err error))
}

// observeSend lets the client's SendObservers see a send; with none it
// returns opts as they are and a done that does nothing.
func (c *Client) observeSend(ctx context.Context, queue string, opts SendOptions) (SendOptions, func(int64, error)) {
	var dones []observedSend
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
		c.observers.guardWork(o, "Sending", "send", func() {
			if done := so.Sending(ctx, queue, &opts); done != nil {
				dones = append(dones, observedSend{o, done})
			}
		})
	}
	return opts, func(id int64, err error) {
		for _, d := range dones {
			c.observers.guardWork(d.ob, "Sending's done", "send", func() { d.done(id, err) })
		}
	}
}

// observedSend is the done function a SendObserver returned, with it.
type observedSend struct {
	ob   Observer
	done func(int64, error)
}
