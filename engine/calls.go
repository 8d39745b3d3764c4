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
	start := time.Now()
	callCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := fn(callCtx)
	if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s (the database call timeout), so its connection was closed; the next try takes another: %w", limit, err)
		c.gaveUp(start, err)
	}
	return err
}

// gaveUp notes a call begun at start and given up for want of an answer:
// in the debug log, where each one is told (the outage's warning tells
// only the first), and by dropping the pool's connections, which the path
// that froze this call's froze with it, once per freeze
// (store.DropFrozenConnections): otherwise each of them, handed out in
// turn, would cost another full timeout before the pool dropped it.
func (c *Client) gaveUp(start time.Time, err error) {
	c.log.Debug("pgbus: a database call got no answer within the database call timeout; its connection was closed", "err", err)
	if c.store.DropFrozenConnections(start) {
		c.log.Debug("pgbus: dropped the connection pool's connections, which stopped answering with that call's; the next calls connect afresh")
	}
}

// unanswered reports whether err is a call given up for want of an
// answer within its deadline.
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}

// lockHolders names, for a start-up step that got no answer in time, the
// sessions holding locks on pgbus's and PGMQ's tables with the statement
// that ends each, asked within the database call timeout; answered is
// false when the database did not answer that either.
func (c *Client) lockHolders(ctx context.Context) (heldBy string, answered bool) {
	err := c.bounded(ctx, func(ctx context.Context) error {
		var terminate string
		var err error
		heldBy, terminate, err = c.store.LockHolders(ctx, 0)
		if heldBy != "" && terminate != "" {
			heldBy += "; to end it: " + terminate
		}
		return err
	})
	return heldBy, err == nil
}
