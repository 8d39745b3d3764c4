package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A program sending through a client whose database cannot be reached (no
// server at the address) tells that apart from other failures with
// errors.Is(err, store.ErrUnavailable), whichever way it sends.
func TestSendToAnUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("postgres://pgbus@%s/pgbus?connect_timeout=5", pgtest.RefusingPort(t).Addr())
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	store.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	t.Cleanup(s.Close)
	c, err := engine.NewClient(s, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testContext(t), time.Minute)
	defer cancel()
	_, err = c.Send(ctx, "orders", 1, engine.SendOptions{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Send: %v; want store.ErrUnavailable", err)
	}
	_, err = c.SendBatch(ctx, "orders", []engine.BatchMessage{{Payload: 1}, {Payload: 2}})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("SendBatch: %v; want store.ErrUnavailable", err)
	}
	if _, err := store.Open(ctx, url); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("store.Open: %v; want store.ErrUnavailable", err)
	}
	if errors.Is(context.DeadlineExceeded, store.ErrUnavailable) {
		t.Error("a context's deadline is taken for an unavailable database")
	}
}
