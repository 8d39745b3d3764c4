package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A program that gives store.New a pool it did not configure with
// store.ConfigurePool, on a server whose sessions run with
// standard_conforming_strings off, is stopped at Run's schema check, told
// to configure the pool: its workers would otherwise fail every dead
// letter on an invalid regular expression, for good.
func TestRunRefusesAPoolWithoutPgbusSessionSettings(t *testing.T) {
	t.Parallel()
	_, q := storeAndQueue(t)
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["standard_conforming_strings"] = "off"
	pool, err := pgxpool.NewWithConfig(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	t.Cleanup(s.Close)
	const want = "configure the pool with store.ConfigurePool (standard_conforming_strings must be on)"
	if _, err := s.CheckSchema(testContext(t)); !errors.Is(err, store.ErrSessionSettings) || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckSchema: %v; want store.ErrSessionSettings saying %q", err, want)
	}
	if _, err := s.Migrate(testContext(t)); !errors.Is(err, store.ErrSessionSettings) {
		t.Errorf("Migrate: %v; want store.ErrSessionSettings", err)
	}
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	if err := c.Run(testContext(t)); !errors.Is(err, store.ErrSessionSettings) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v; want store.ErrSessionSettings saying %q", err, want)
	}
}
