package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A service holding every connection of the pool it shares with the
// workers (its transactions open) keeps their calls waiting for one: the
// workers say so, in those words, not that the database does not answer,
// and do not drop the pool's connections, the service's among them.
func TestWorkersWaitingForABusySharedPoolSayItAndDropNothing(t *testing.T) {
	t.Parallel()
	own, q := storeAndQueue(t)
	pool, s := sharedPool(t, 2)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		cfg.DatabaseCallTimeout = engine.MinDatabaseCallTimeout
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the job archived", func() bool { return pgtest.Archived(t, own, q) == 1 })

	ctx := testContext(t)
	var held []context.CancelFunc
	for range 2 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, func() { _ = tx.Rollback(context.Background()) })
	}
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	heldSince := time.Now()
	pgtest.Eventually(t, time.Minute, "the workers to say why their calls were given up", func() bool {
		out := logs.String()
		return strings.Contains(out, "for a connection of the pool") || strings.Contains(out, "does not answer")
	})
	out := logs.String()
	if !strings.Contains(out, "waited 1s for a connection of the pool: all 2 in use") || strings.Contains(out, "does not answer") {
		t.Errorf("the workers' log does not say that they waited for a connection of the busy pool:\n%s", out)
	}
	if !s.DropFrozenConnections(heldSince) {
		t.Errorf("the workers dropped the pool's connections, the service's among them, though the database answers:\n%s", out)
	}
}

// Run started while a service holds the one connection of the pool it
// shares says that it waits for a connection of the pool, not that the
// database does not answer, and starts once the service lets it go.
func TestRunStartedOnABusySharedPoolWaitsForAConnection(t *testing.T) {
	t.Parallel()
	own, q := storeAndQueue(t)
	pool, s := sharedPool(t, 1)
	ctx := testContext(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		cfg.DatabaseCallTimeout = engine.MinDatabaseCallTimeout
	})
	ran := signalRuns(c, q)
	stop, done := runInBackground(c)
	defer stop()
	awaitWhileRunning(t, done, "Run to say what it waits for", func() bool {
		out := logs.String()
		return strings.Contains(out, "for a connection of the pool") || strings.Contains(out, "does not answer")
	})
	if out := logs.String(); !strings.Contains(out, "starting waits for a connection of the pool") || strings.Contains(out, "does not answer") {
		t.Fatalf("Run does not say that it waits for a connection of the busy pool:\n%s", out)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := own.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	case <-ctx.Done():
		t.Fatalf("the job did not run once the pool was free:\n%s", logs.String())
	}
}
