package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/store"
)

// deliveryCheckWait is how long a new listener connection waits for its
// own test notification before the client falls back to polling.
const deliveryCheckWait = 5 * time.Second

// deliveryRecheck is how long a client that fell back to polling waits
// before it checks again, quietly, whether notifications arrive (the
// pooler may have been taken out, or the check may have met a stalled
// server).
const deliveryRecheck = 5 * time.Minute

// listen wakes queue workers on the notification a send makes in its
// transaction. A lost connection is re-made with backoff, and the idle
// queues are checked at once after a reconnect since notifications may
// have been missed; polling covers the gap meanwhile. When notifications cannot reach this process
// (a pooler in transaction mode), it logs so once, leaves the queues to
// polling, and checks again now and then.
func (c *Client) listen(ctx context.Context, workers map[string]*queueWorker) {
	if c.cfg.NoListen {
		c.log.Info("pgbus: notifications are off; idle queues are checked by polling", "poll_interval", c.cfg.PollInterval)
		return
	}
	byPhysical := &tableIndex{c: c, workers: workers}
	const firstDelay, maxDelay = 100 * time.Millisecond, 10 * time.Second
	delay := firstDelay
	polling := false
	listening := func() {
		if polling {
			c.log.Info("pgbus: notifications reach this process again; idle queues are woken by them")
			polling = false
		}
	}
	for ctx.Err() == nil {
		began := time.Now()
		err := c.listenOnce(ctx, byPhysical, listening)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrNoDelivery) {
			if !polling {
				c.log.Warn("pgbus: notifications do not reach this process, so idle queues are checked by polling; "+
					"behind a pooler in transaction mode (PgBouncer) that is expected: turn listening off (the no-listen option) to skip this check, "+
					"or point a session-mode pool or PostgreSQL itself at pgbus for prompt wake-ups",
					"err", err, "poll_interval", c.cfg.PollInterval)
				polling = true
			}
			delay = firstDelay
			sleep(ctx, deliveryRecheck)
			continue
		}
		if time.Since(began) > maxDelay {
			// The connection held for a while: this is a new outage, not
			// the next failure of the last one.
			delay = firstDelay
		}
		if !c.outage.failed(err) {
			c.log.Warn(c.advised("pgbus: notification listener lost its connection; reconnecting", err), "err", err, "in", delay.String())
		}
		sleep(ctx, delay)
		delay = min(delay*2, maxDelay)
	}
}

// listenOnce listens on one connection until it fails; listening is
// called once notifications are known to arrive on it.
func (c *Client) listenOnce(ctx context.Context, byPhysical *tableIndex, listening func()) error {
	var l *store.Listener
	err := c.bounded(ctx, func(ctx context.Context) (err error) {
		l, err = c.store.Listen(ctx)
		return err
	})
	if err != nil {
		return err
	}
	defer c.closeListener(ctx, l)
	err = c.boundedBy(ctx, deliveryCheckWait, func(ctx context.Context) error {
		return l.CheckDelivery(ctx, deliveryCheckWait)
	})
	if err != nil {
		return err
	}
	listening()
	c.idle.checkNow() // notifications may have been missed while disconnected
	for {
		queue, err := c.waitForSend(ctx, l)
		if err != nil {
			return err
		}
		if w, ok := byPhysical.worker(queue); ok {
			w.poke()
		}
	}
}

// waitForSend waits for a send's notification. A listener that hears none
// for DatabaseCallTimeout checks that notifications still reach it: one
// whose connection stopped answering without being closed (a failover
// behind a proxy, a frozen path) would otherwise hear nothing again,
// unnoticed, leaving every idle queue to polling until a restart.
func (c *Client) waitForSend(ctx context.Context, l *store.Listener) (string, error) {
	for {
		waitCtx, cancel := context.WithTimeout(ctx, c.cfg.DatabaseCallTimeout)
		queue, err := l.WaitForSend(waitCtx)
		quiet := errors.Is(waitCtx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil || ctx.Err() != nil || !quiet {
			return queue, err
		}
		err = c.boundedBy(ctx, deliveryCheckWait, func(ctx context.Context) error {
			return l.CheckDelivery(ctx, deliveryCheckWait)
		})
		if errors.Is(err, store.ErrNoDelivery) {
			// Not the pooler the first check tells of: this connection
			// delivered notifications before.
			return "", fmt.Errorf("the listener's connection stopped delivering notifications: its check's own did not arrive within %s", deliveryCheckWait)
		}
		if err != nil {
			return "", err
		}
		c.idle.checkNow() // the check drops the notifications it meets
	}
}

// closeListener closes l without waiting on a connection that stopped
// answering.
func (c *Client) closeListener(ctx context.Context, l *store.Listener) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.DatabaseCallTimeout)
	defer cancel()
	_ = l.Close(ctx)
}

// tableIndex maps each physical queue of the workers to its worker for the
// listener, made again whenever a worker took up a queue's new priority
// levels: a send to a level the index did not know would wake no one.
type tableIndex struct {
	c       *Client
	workers map[string]*queueWorker
	layouts int64 // Client.layouts when of was made
	of      map[string]*queueWorker
}

func (x *tableIndex) worker(table string) (*queueWorker, bool) {
	if n := x.c.layouts.Load(); x.of == nil || n != x.layouts {
		x.layouts = n
		x.of = make(map[string]*queueWorker, len(x.workers))
		for _, w := range x.workers {
			for _, name := range w.tables() {
				x.of[name] = w
			}
		}
	}
	w, ok := x.of[table]
	return w, ok
}
