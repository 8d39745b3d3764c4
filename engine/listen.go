package engine

import (
	"context"
	"errors"
	"time"

	"github.com/pgbus/pgbus/store"
)

// deliveryCheckWait is how long a new listener connection waits for its
// own test notification before the client falls back to polling.
const deliveryCheckWait = 5 * time.Second

// listen wakes queue workers on the notification a send makes in its
// transaction. A lost connection is re-made with backoff, and every queue is
// woken after a reconnect since notifications may have been missed; polling
// covers the gap meanwhile. When notifications cannot reach this process
// (a pooler in transaction mode), it logs so once and leaves the queues to
// polling.
func (c *Client) listen(ctx context.Context, workers map[string]*queueWorker) {
	if c.cfg.NoListen {
		c.log.Info("pgbus: notifications are off; idle queues are read by polling", "poll_interval", c.cfg.PollInterval)
		return
	}
	byPhysical := make(map[string]*queueWorker, len(workers))
	for _, w := range workers {
		for _, name := range w.physical {
			byPhysical[name] = w
		}
	}
	const firstDelay, maxDelay = 100 * time.Millisecond, 10 * time.Second
	delay := firstDelay
	for ctx.Err() == nil {
		began := time.Now()
		err := c.listenOnce(ctx, byPhysical)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrNoDelivery) {
			c.log.Warn("pgbus: notifications do not reach this process, so idle queues are read by polling; "+
				"behind a pooler in transaction mode (PgBouncer) that is expected: set NoListen (PGBUS_NO_LISTEN=1) to skip this check, "+
				"or point a session-mode pool or PostgreSQL itself at pgbus for prompt wake-ups",
				"err", err, "poll_interval", c.cfg.PollInterval)
			return
		}
		if time.Since(began) > maxDelay {
			// The connection held for a while: this is a new outage, not
			// the next failure of the last one.
			delay = firstDelay
		}
		c.log.Warn("pgbus: notification listener lost its connection; reconnecting", "err", err, "in", delay)
		sleep(ctx, delay)
		delay = min(delay*2, maxDelay)
	}
}

func (c *Client) listenOnce(ctx context.Context, byPhysical map[string]*queueWorker) error {
	l, err := c.store.Listen(ctx)
	if err != nil {
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	if err := l.CheckDelivery(ctx, deliveryCheckWait); err != nil {
		return err
	}
	for _, w := range byPhysical {
		w.poke() // notifications may have been missed while disconnected
	}
	for {
		queue, err := l.WaitForSend(ctx)
		if err != nil {
			return err
		}
		if w, ok := byPhysical[queue]; ok {
			w.poke()
		}
	}
}
