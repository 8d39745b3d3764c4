package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A start whose step waited for a queue's table another session holds
// (LOCK TABLE, VACUUM FULL) logged that the database did not answer,
// although it did: the log now names the session that holds the lock and
// the statement that ends it, and says when starting goes on.
func TestStartSaysWhoHoldsTheTableItWaitsFor(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, st, nil)
	if _, err := st.Send(pgtest.Context(t), q, store.NewMessage{Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	lock := pgtest.HoldExclusiveLock(t, st, "q_"+q)
	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		cfg.DatabaseCallTimeout = engine.MinDatabaseCallTimeout
	})
	ran := make(chan struct{}, 1)
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		ran <- struct{}{}
		return nil
	})
	pgtest.Start(t, c)

	said := fmt.Sprintf("pg_terminate_backend(%d)", lock.PID)
	pgtest.Eventually(t, time.Minute, "the start's log to name the lock's holder", func() bool { return strings.Contains(logs.String(), said) })
	text := logs.String()
	if !strings.Contains(text, "starting waits for a lock another session holds") || strings.Contains(text, "the database does not answer") {
		t.Fatalf("start's log while pid %d holds the queue's table:\n%s\nwant the lock and its holder named, not a database that does not answer", lock.PID, text)
	}
	lock.Release()
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatalf("no job ran within a minute of the lock's end:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "the lock that held starting back is gone") {
		t.Errorf("start's log after the lock went:\n%s\nwant its end said", logs.String())
	}
}
