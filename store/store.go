// Package store holds every SQL statement of pgbus: the connection pool, the
// migration runner, and the queue operations on the PGMQ table layout.
//
// Queue names reach SQL only as quoted identifiers built from validated names;
// payloads and headers only as parameters.
package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a handle on one pgbus database. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool

	// tables caches per-queue column facts (PGMQ versions differ); cleared
	// for a queue when it is dropped.
	tables sync.Map // physical queue name -> tableInfo
}

// Open connects to the database at url. It does not migrate: call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w; expected postgres://user:pass@host:port/db", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect to %s: %w; check that the server is running and DATABASE_URL is right", cfg.ConnConfig.Host, err)
	}
	return New(pool), nil
}

// New wraps an existing pool. The caller keeps ownership of the pool's
// configuration; Close closes it.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// Pool returns the underlying pool, for its configuration and statistics and
// for tests; pgbus statements live in this package (see Listen for
// notifications).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }
