package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// The visibility heartbeat of a queue whose worker holds no message woke
// every 100ms to find nothing to extend: an idle worker woke its process
// 70 to 80 times a second. Holding none, it waits for a message to be
// held; with one held it runs as before, and once none is held again it
// waits again.
func TestHeartbeatWaitsWhileNoMessageIsHeld(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	var turns, parked atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		engine.WatchHeartbeat(cfg, func(p bool) {
			turns.Add(1)
			if p {
				parked.Add(1)
			}
		})
	})
	release := make(chan struct{})
	c.HandleQueue(q, func(ctx context.Context, _ *engine.Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the heartbeat of the idle worker to wait for a message held", func() bool { return parked.Load() >= 1 })
	if n := turns.Load(); n > 2 {
		t.Errorf("the heartbeat turned %d times before it waited, holding nothing; want it to wait at its first turn", n)
	}
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the heartbeat to turn for the message held", func() bool { return parked.Load() >= 1 && turns.Load() > 2 })
	// Counted while the message is held, when the heartbeat cannot wait:
	// once the job is settled it may wait before the test looks.
	before := parked.Load()
	close(release)
	pgtest.Eventually(t, time.Minute, "the job archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	pgtest.Eventually(t, time.Minute, "the heartbeat to wait again once the message is settled", func() bool { return parked.Load() > before })
}
