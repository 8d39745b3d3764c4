package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PoolExhausted reports whether every connection the pool may open is in
// use now (none idle, none left to open), and how many it may open: a
// statement run now waits for a call to release one, however soon the
// database would answer it. Calls that wait for a lock another session
// holds keep their connections for as long as they wait.
func (s *Store) PoolExhausted() (exhausted bool, size int) {
	if s.pool == nil {
		return false, 0
	}
	st := s.pool.Stat()
	return st.IdleConns() == 0 && st.TotalConns() >= st.MaxConns(), int(st.MaxConns())
}

// ErrConnectionWait marks the error of a call given up while it waited
// for a connection of the pool, every one of which other calls held, on a
// database that answers (WaitedForConnection): no outage, and no reason to
// drop the pool's connections.
var ErrConnectionWait = errors.New("waited for a connection of the pool")

// WaitedForConnection reports whether err, the error of a call whose
// deadline passed, ended while the call waited for a connection of the
// pool, every one of which other calls held, rather than for an answer of
// the database: no statement of the call, nor a connection being made for
// it, was cut off by the deadline (pgx says those in its own timeout
// error), every connection the pool may open is in use still, and the
// database answers a question asked now, beside the pool when it has no
// connection free, within wait. size is the pool's size. A database that
// froze holds the pool's connections too, but gets no answer to the
// question; a call given up that waited for a connection must not be
// told as a database that does not answer, nor drop the pool's
// connections, which a program sharing the pool holds in its
// transactions.
func (s *Store) WaitedForConnection(ctx context.Context, err error, wait time.Duration) (waited bool, size int) {
	exhausted, size := s.PoolExhausted()
	if !exhausted || !errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return false, size
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	asked := s.diagnose(ctx, "ask whether the database answers", func(q querier) error {
		rows, err := q.Query(ctx, `SELECT 1`)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	})
	return asked == nil, size
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
	case <-s.Closed():
		return ask(s.reads) // which says the Store, or its pool, was closed
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
