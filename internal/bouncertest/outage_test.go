package bouncertest_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestWorkerOutageThroughPausedBouncer: workers whose calls a paused
// PgBouncer holds unanswered say in their outage warning that a pooler in
// front of the database may be paused or have no server connection to
// give, and what to check on it, as a send and the health check do.
func TestWorkerOutageThroughPausedBouncer(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	direct := pgtest.Store(t)
	b := bouncertest.Start(t, pgtest.URL(t))
	q := pgtest.NewFastQueue(t, direct, "paused", nil)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, openStore(t, b.URL()), q, func(c *engine.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.DatabaseCallTimeout = 2 * time.Second
		c.NoListen = true
	})
	ran := make(chan int64, 1)
	c.HandleQueue(q, func(_ context.Context, job *engine.Job) error {
		select {
		case ran <- job.ID:
		default:
		}
		return nil
	})
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	id, err := direct.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.AwaitJob(ctx, t, ran, done, id, &logs)
	b.Pause(t)
	var warning string
	pgtest.Eventually(t, time.Minute, "the workers to warn that the database does not answer", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "does not answer") {
				warning = line
				return true
			}
		}
		return false
	})
	for _, want := range []string{"pooler", "paused", "RESUME", "SHOW POOLS"} {
		if !strings.Contains(warning, want) {
			t.Errorf("the outage warning through a paused PgBouncer does not say %q:\n%s", want, warning)
		}
	}
	b.Resume(t)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
