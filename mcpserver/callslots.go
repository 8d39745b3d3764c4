package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// DefaultToolCallWait is how long a tool call waits for a slot among the
// calls a server runs at once (Options.ToolCallWait) before it is answered
// that the server is busy.
const DefaultToolCallWait = 10 * time.Second

// minToolCalls is the fewest tool calls a server runs at once by default.
const minToolCalls = 8

// DefaultMaxToolCalls is how many tool calls a server over svc runs at once
// unless Options.MaxToolCalls says: twice the connections of svc's
// database pool, at least 8. Each call holds its arguments, what it reads
// and its answer in memory; beyond the pool's connections, more calls at
// once would only wait for a connection, and hundreds of sessions calling
// together held hundreds of MB.
func DefaultMaxToolCalls(svc *ops.Service) int {
	return max(minToolCalls, 2*svc.PoolSize())
}

// callSlots bounds the tool calls a server runs at once, of all its
// sessions and transports together.
type callSlots struct {
	slots chan struct{}
	wait  time.Duration
}

func newCallSlots(n int, wait time.Duration) *callSlots {
	if wait <= 0 {
		wait = DefaultToolCallWait
	}
	return &callSlots{slots: make(chan struct{}, n), wait: wait}
}

// take waits for a slot while ctx lives, at most bound when it is above
// 0; it reports whether it got one, and ctx's error when ctx ended first.
func (c *callSlots) take(ctx context.Context, bound time.Duration) (bool, error) {
	select {
	case c.slots <- struct{}{}:
		return true, nil
	default:
	}
	var timeout <-chan time.Time
	if bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case c.slots <- struct{}{}:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-timeout:
		return false, nil
	}
}

func (c *callSlots) give() { <-c.slots }

// middleware runs each tool call in a slot: a call beyond the slots waits
// for one while its context lives, at most c.wait, and is then answered
// that the server is busy. A call that waits for its person's answer
// lets go of its slot meanwhile (tools.WithPause).
func (c *callSlots) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ok, err := c.take(ctx, c.wait)
		if err != nil {
			return nil, err
		}
		if !ok {
			return tools.UnavailableResult(c.busy()), nil
		}
		held := true
		defer func() {
			if held {
				c.give()
			}
		}()
		ctx = tools.WithPause(ctx, func(ctx context.Context, wait func()) error {
			c.give()
			held = false
			wait()
			// The person answered: the call goes on once a slot is free,
			// however long that takes, while its client waits for it.
			if _, err := c.take(ctx, 0); err != nil {
				return err
			}
			held = true
			return nil
		})
		return next(ctx, req)
	}
}

// busy is the answer of a call that found no slot in its wait.
func (c *callSlots) busy() string {
	n := cap(c.slots)
	return fmt.Sprintf("pgbus is busy: it runs at most %d %s at once, for all its clients together, and none of them ended in the %s this call waited; call again in a few seconds, and make fewer calls at once (wait for the answers of those sent before sending more)",
		n, plural.Of(n, "tool call", "tool calls"), c.wait)
}
