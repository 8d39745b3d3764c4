package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PoolExhausted reports whether every connection the pool may open is in
// use now (none idle, none left to open), and how many it may open: a
// statement run now waits for a call to release one, however soon the
// database would answer it. Calls that wait for a lock another session
// holds keep their connections for as long as they wait.
func (s *Store) PoolExhausted() (exhausted bool, size int) {
	st := s.pool.Stat()
	return st.IdleConns() == 0 && st.TotalConns() >= st.MaxConns(), int(st.MaxConns())
}

// asideCloseWait bounds the goodbye of a connection made aside, which a
// frozen path would hold.
const asideCloseWait = time.Second

// diagnose runs ask, a question about the database asked on behalf of a
// call that got no answer in time, on the pool when one of its
// connections is free, or else on a connection of its own, made for it
// as the pool makes its own (its BeforeConnect and AfterConnect) and
// closed after, one such connection at a time: with the pool exhausted
// by calls that wait (for a lock, on a slow database), a question asked
// on it would wait behind them and read as a database that does not
// answer.
func (s *Store) diagnose(ctx context.Context, what string, ask func(querier) error) error {
	if exhausted, _ := s.PoolExhausted(); !exhausted {
		return ask(s.reads)
	}
	select {
	case <-s.closed:
		return ask(s.reads) // which says the Store was closed
	default:
	}
	select {
	case s.aside <- struct{}{}:
		defer func() { <-s.aside }()
	case <-ctx.Done():
		return fmt.Errorf("store: %s: all %d connections of the pool are in use, and another question waits on the one connection made beside it: %w", what, s.pool.Config().MaxConns, ctx.Err())
	}
	cfg := s.pool.Config()
	connCfg := cfg.ConnConfig.Copy()
	if cfg.BeforeConnect != nil {
		if err := cfg.BeforeConnect(ctx, connCfg); err != nil {
			return fmt.Errorf("store: %s: connect beside the pool, all %d of whose connections are in use: %w", what, cfg.MaxConns, err)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, connCfg)
	if err != nil {
		return fmt.Errorf("store: %s: connect beside the pool, all %d of whose connections are in use: %w", what, cfg.MaxConns, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), asideCloseWait)
		defer cancel()
		_ = conn.Close(ctx)
	}()
	if cfg.AfterConnect != nil {
		if err := cfg.AfterConnect(ctx, conn); err != nil {
			return fmt.Errorf("store: %s: connect beside the pool, all %d of whose connections are in use: %w", what, cfg.MaxConns, err)
		}
	}
	return ask(conn)
}
