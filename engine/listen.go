package engine

import (
	"context"
	"time"
)

// listen wakes queue workers on the notification a send makes in its
// transaction. A lost connection is re-made with backoff, and every queue is
// woken after a reconnect since notifications may have been missed; polling
// covers the gap meanwhile.
func (c *Client) listen(ctx context.Context, workers map[string]*queueWorker) {
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
