package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A connection that stops answering without being closed (a failover
// behind a proxy, a frozen path) holds no loop for good: each call gives
// up after the database call timeout, its connection is dropped, and the
// next try takes a new one. Polls an hour apart leave the wake-ups to the
// listener, which must notice its own connection went silent too.
func TestWorkersRecoverFromFrozenConnections(t *testing.T) {
	direct := testStore(t)
	q := newQueue(t, direct, nil)
	proxy := pgtest.NewFreezingProxy(t, pgtest.URL(t))
	through := pgtest.OpenStore(t, proxy.URL())
	var logs pgtest.SyncBuffer
	var ran atomic.Int64
	c := pgtest.NewClient(t, through, q, func(cfg *engine.Config) {
		cfg.PollInterval = time.Hour
		cfg.DatabaseCallTimeout = 2 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	pgtest.Start(t, c)
	sender := pgtest.NewClient(t, direct, q, nil) // never run: it only sends
	for i := range 3 {
		pgtest.Send(t, sender, q, map[string]int{"n": i}, engine.SendOptions{})
	}
	pgtest.Eventually(t, time.Minute, "the first messages archived", func() bool { return pgtest.Archived(t, direct, q) == 3 })

	proxy.Freeze()
	// Two rounds: a wake-up the listener received before the freeze may
	// still be pending and serve the first; the second then needs a
	// listener on a new connection.
	for round := 1; round <= 2; round++ {
		for i := range 3 {
			pgtest.Send(t, sender, q, map[string]int{"round": round, "n": i}, engine.SendOptions{})
		}
		pgtest.Eventually(t, 3*time.Minute, fmt.Sprintf("the messages of round %d after the freeze archived through new connections", round), func() bool {
			return pgtest.Archived(t, direct, q) == 3+3*round
		})
	}
	if ran.Load() < 9 {
		t.Errorf("handlers ran %d times, want at least 9", ran.Load())
	}
}
