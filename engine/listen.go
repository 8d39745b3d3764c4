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

// deliveryRecheck is how long a client that fell back to polling waits
// before it checks again, quietly, whether notifications arrive (the
// pooler may have been taken out, or the check may have met a stalled
// server).
const deliveryRecheck = 5 * time.Minute

// listen wakes queue workers on the notification a send makes in its
// transaction. A lost connection is re-made with backoff, and every queue is
// woken after a reconnect since notifications may have been missed; polling
// covers the gap meanwhile. When notifications cannot reach this process
// (a pooler in transaction mode), it logs so once, leaves the queues to
// polling, and checks again now and then.
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
				c.log.Warn("pgbus: notifications do not reach this process, so idle queues are read by polling; "+
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
			c.log.Warn("pgbus: notification listener lost its connection; reconnecting", "err", err, "in", delay.String())
		}
		sleep(ctx, delay)
		delay = min(delay*2, maxDelay)
	}
}

// listenOnce listens on one connection until it fails; listening is
// called once notifications are known to arrive on it.
func (c *Client) listenOnce(ctx context.Context, byPhysical map[string]*queueWorker, listening func()) error {
	l, err := c.store.Listen(ctx)
	if err != nil {
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	if err := l.CheckDelivery(ctx, deliveryCheckWait); err != nil {
		return err
	}
	listening()
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
