package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/store"
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
		if waited := c.poolWait(ctx, limit, err); waited != nil {
			return waited
		}
		err = fmt.Errorf("no answer within %s (the database call timeout), so its connection was closed; the next try takes another: %w", limit, err)
		c.gaveUp(start, err)
	}
	return err
}

// poolWait returns err, of a call given up at its deadline limit, as a
// *poolWaitError when the call waited for a connection of the pool, every
// one of which other calls held (this process's, or those of a program
// sharing the pool, its transactions open), on a database that answers
// (store.WaitedForConnection); else nil. Such a call is no outage, and
// dropping the pool's connections would end none of those calls.
func (c *Client) poolWait(ctx context.Context, limit time.Duration, err error) error {
	waited, size := c.store.WaitedForConnection(ctx, err, min(c.cfg.DatabaseCallTimeout, lockProbeWait))
	if !waited {
		return nil
	}
	return &poolWaitError{waited: limit, size: size, err: err}
}

// poolWaitError is a call given up while it waited for a connection of
// the pool, every one of which other calls held, on a database that
// answers.
type poolWaitError struct {
	waited time.Duration
	size   int
	err    error
}

func (e *poolWaitError) Error() string {
	return fmt.Sprintf("waited %s for a connection of the pool: all %d in use, held by other calls of this process or of the program sharing the pool: %v", e.waited, e.size, e.err)
}

func (e *poolWaitError) Unwrap() []error { return []error{store.ErrConnectionWait, e.err} }

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
// answer within its deadline: not one that waited for a connection of a
// busy pool (poolWaitError).
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, store.ErrConnectionWait)
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
