package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// bounded runs fn, one database call of a loop, under
// Config.DatabaseCallTimeout. A connection that stops answering without
// being closed (a failover behind a proxy, a frozen server, a path that
// drops everything) would hold the call until TCP gives up, or for ever;
// when the deadline passes, pgx closes the connection, the pool drops it,
// and the loop's next try takes another. The error then says so, and
// counts as the database not answering (see outage).
func (c *Client) bounded(ctx context.Context, fn func(context.Context) error) error {
	return c.boundedBy(ctx, 0, fn)
}

// boundedBy is bounded for a call that waits on purpose, up to the
// timeout plus wait: the listener's check of notifications waits for one.
func (c *Client) boundedBy(ctx context.Context, wait time.Duration, fn func(context.Context) error) error {
	limit := c.cfg.DatabaseCallTimeout + wait
	callCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := fn(callCtx)
	if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s (the database call timeout), so its connection was closed; the next try takes another: %w", limit, err)
	}
	return err
}

// unanswered reports whether err is a call given up for want of an
// answer within its deadline.
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}
