// Package store holds every SQL statement of pgbus: the connection pool, the
// migration runner, and the queue operations on the PGMQ table layout.
//
// Queue names reach SQL only as quoted identifiers built from validated names;
// payloads and headers only as parameters.
package store

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a handle on one pgbus database. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// db runs statements, retrying one once on another connection when its
	// connection was dead and it was never sent; reads also retries reads
	// whose connection broke while they ran.
	db, reads db

	// tables caches per-queue column facts (PGMQ versions differ); cleared
	// for a queue when it is dropped.
	tables sync.Map // physical queue name -> tableInfo

	cursorKeys cursorKey
}

// Open connects to the database at url. It does not migrate: call Migrate.
// The pool pings a connection idle for more than 100ms before handing it
// out, so connections that died (say, in a server restart) are replaced.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w; write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE, with a password's @, : and / percent-encoded (%%40, %%3A, %%2F)", err)
	}
	if strings.Contains(cfg.ConnConfig.Host, "@") {
		// An unescaped @ in the password makes the password's end part of
		// the host: it would be looked up, and quoted in errors.
		return nil, fmt.Errorf("store: the database URL's host holds an @: percent-encode an @ in the password as %%40 (and a : as %%3A, a / as %%2F)")
	}
	cfg.ShouldPing = shouldPing
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
// configuration (Open also makes the pool ping connections idle for more
// than 100ms before handing them out); Close closes it.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, db: db{pool: pool}, reads: db{pool: pool, reads: true}}
}

// Pool returns the underlying pool, for its configuration and statistics and
// for tests; pgbus statements live in this package (see Listen for
// notifications).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }
