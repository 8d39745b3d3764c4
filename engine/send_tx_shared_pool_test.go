package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// sharedPool opens a pool of conns connections that a service shares with
// pgbus, as the README sets it up (ConfigurePool, NewWithConfig, New), and
// the store over it.
func sharedPool(t *testing.T, conns int32) (*pgxpool.Pool, *store.Store) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	store.ConfigurePool(cfg)
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	t.Cleanup(s.Close)
	return pool, s
}

// A service that shares its one-connection pool with pgbus sends in the
// transaction holding that connection: every read SendTx and SendBatchTx
// need (the queue's levels, the store's database, the server's clock for a
// deadline) goes through the transaction, and none waits for a second
// connection, neither on first use nor once the levels read are old.
func TestSendTxNeedsNoSecondConnectionOfASharedPool(t *testing.T) {
	t.Parallel()
	own := testStore(t)
	plain := newQueue(t, own, nil)
	levels := newPriorityQueue(t, own, 2)
	pool, s := sharedPool(t, 1)
	c, err := engine.NewClient(s, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// A send that waited for a second connection would wait until ctx
	// ends: a bound generous enough for sends on a busy machine, which
	// take seconds there, ends the test rather than holding it.
	ctx, cancel := context.WithTimeout(testContext(t), time.Minute)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	acquired := pool.Stat().AcquireCount()

	send := func(round string) {
		t.Helper()
		if _, err := c.SendTx(ctx, tx, plain, 1, engine.SendOptions{}); err != nil {
			t.Fatalf("%s: SendTx to a plain queue: %v", round, err)
		}
		if _, err := c.SendTx(ctx, tx, levels, 2, engine.SendOptions{Priority: 1, Deadline: time.Now().Add(time.Hour)}); err != nil {
			t.Fatalf("%s: SendTx to a queue with levels: %v", round, err)
		}
		if _, err := c.SendBatchTx(ctx, tx, plain, []engine.BatchMessage{{Payload: 3}, {Payload: 4, Options: engine.SendOptions{IdempotencyKey: round}}}); err != nil {
			t.Fatalf("%s: SendBatchTx to a plain queue: %v", round, err)
		}
		if _, err := c.SendBatchTx(ctx, tx, levels, []engine.BatchMessage{{Payload: 5}, {Payload: 6, Options: engine.SendOptions{Priority: 1}}}); err != nil {
			t.Fatalf("%s: SendBatchTx to a queue with levels: %v", round, err)
		}
	}
	send("first")
	engine.AgeSendLayouts(c)
	send("after the layouts aged")
	// A level's name is still told from a queue, through tx, which goes on.
	if _, err := c.SendTx(ctx, tx, store.PriorityQueueName(levels, 1), 7, engine.SendOptions{}); !errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTxFailed) {
		t.Fatalf("SendTx to a level's name: %v, want store.ErrInvalid with the transaction going on", err)
	}
	if n := pool.Stat().AcquireCount() - acquired; n != 0 {
		t.Fatalf("the sends acquired %d connections of the pool beside the transaction's, want 0", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A value PostgreSQL refuses aborts tx, which holds the connection
	// still: the message is named all the same, without waiting for it.
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendBatchTx(ctx, tx, plain, []engine.BatchMessage{{Payload: 1}, {Payload: json.RawMessage(`{"n": 1e200000}`)}})
	if !errors.Is(err, store.ErrTxFailed) || !strings.Contains(err.Error(), "(the batch's message at index 1)") {
		t.Fatalf("SendBatchTx of a number jsonb cannot hold: %v, want the transaction failed naming the message at index 1", err)
	}
	_ = tx.Rollback(ctx)
	if n := pgtest.Live(t, own, plain); n != 6 {
		t.Errorf("%d messages in the plain queue after the commit, want 6", n)
	}
	if n := pgtest.Live(t, own, store.PriorityQueueName(levels, 1)); n != 4 {
		t.Errorf("%d messages at level 1 after the commit, want 4", n)
	}
}
