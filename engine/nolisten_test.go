package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// On a direct connection the delivery check passes and notifications wake
// the workers: with an hour between polls, a message sent after the start
// still runs, and nothing is said about polling.
func TestListenCheckPassesOnADirectConnection(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	var ran atomic.Int64
	app := uniqueName("pgbus_listen")
	c, logs := loggedClient(t, pgtest.OpenNamedStore(t, app), q, slog.LevelInfo, func(cfg *engine.Config) { cfg.PollInterval = time.Hour })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	pgtest.Start(t, c)
	// Once its listener is connected, the client's first read, of the
	// empty queue, is behind it or under way: only a notification can wake
	// it for the message.
	pgtest.Eventually(t, time.Minute, "the client's listener to connect", func() bool { return len(listenerPIDs(t, s, app)) == 1 })
	pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the message to run, woken by its notification", func() bool { return ran.Load() == 1 })
	if strings.Contains(logs.String(), "notifications") {
		t.Errorf("a client on a direct connection logged about notifications:\n%s", logs.String())
	}
}

// With NoListen the client says once that it only polls, and polling
// alone runs what is sent.
func TestNoListenPolls(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	var logs pgtest.SyncBuffer
	var ran atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.NoListen = true
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	pgtest.Start(t, c)
	for i := range 3 {
		pgtest.Send(t, c, q, map[string]int{"n": i}, engine.SendOptions{})
	}
	pgtest.Eventually(t, time.Minute, "the messages to run by polling", func() bool { return ran.Load() == 3 })
	if n := strings.Count(logs.String(), "notifications are off"); n != 1 {
		t.Errorf("NoListen logged %d times that notifications are off, want once:\n%s", n, logs.String())
	}
}
