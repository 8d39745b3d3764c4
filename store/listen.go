package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Listener receives the notifications sends make (see NotifyChannel) on a
// connection of its own, outside the pool. It is not safe for concurrent use.
type Listener struct {
	conn *pgx.Conn
	s    *Store
	// every is how often WaitForSend, hearing nothing, sends the server a
	// statement, or 0 for never: the server's idle_session_timeout,
	// which a role or database may set, would otherwise end a connection
	// that only waits for notifications.
	every time.Duration
	// spoke is when the listener last sent the server a statement.
	spoke time.Time
}

// ErrNoDelivery says that a notification sent to the database did not reach
// the listener: typically a connection pooler in transaction mode (such as
// PgBouncer with pool_mode = transaction) sits between pgbus and PostgreSQL,
// which runs LISTEN on a server connection that it then hands to other
// clients. Wake workers by polling instead.
//
// Listen returns it too, without running LISTEN, when it finds such a
// pooler: one whose server connections take one client's statements after
// another's (see errSessionNotKept).
var ErrNoDelivery = errors.New("notifications sent to the database do not reach this listener " +
	"(is a pooler in transaction mode, such as PgBouncer, between pgbus and PostgreSQL?)")

// errSessionNotKept is Listen's error when a connection pooler between
// pgbus and PostgreSQL does not keep the listener's connection on one
// server connection (transaction pooling).
var errSessionNotKept = fmt.Errorf("%w: a connection pooler in transaction mode (such as PgBouncer with pool_mode = transaction) "+
	"hands this connection's statements to server connections other clients use in turn, so LISTEN was not run: "+
	"it would stay on one of them, whose later clients would receive pgbus's notifications", ErrNoDelivery)

// sessionChecks is how many times Listen checks that a connection through
// a pooler keeps its server connection (keepsSession).
const sessionChecks = 3

// probePrefix starts the payload of CheckDelivery's notification: no queue
// name starts with it, so other listeners ignore it.
const probePrefix = "?probe "

// Listen opens a dedicated connection with the pool's settings and subscribes
// it to send notifications. Notifications made before Listen returns are not
// received: a caller that must not miss a message reads its queues after
// Listen. Close the listener when done.
//
// A connection whose server process is not the one its start named, as
// when a connection pooler answered it, is first checked to keep one
// server connection (keepsSession): through a pooler in transaction mode
// Listen runs no LISTEN, which would stay on a server connection the
// pooler then hands to other clients, and returns an error wrapping
// ErrNoDelivery.
func (s *Store) Listen(ctx context.Context) (*Listener, error) {
	if s.pool == nil {
		return nil, errNoPool()
	}
	cfg := s.pool.Config()
	connCfg := cfg.ConnConfig.Copy()
	if cfg.BeforeConnect != nil {
		// The address and login as they are now (OpenLazyFrom).
		if err := cfg.BeforeConnect(ctx, connCfg); err != nil {
			return nil, fmt.Errorf("store: listen for sends: connect: %w", err)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, connCfg)
	if err != nil {
		return nil, fmt.Errorf("store: listen for sends: connect: %w", err)
	}
	// In milliseconds; PostgreSQL before 14 has no such setting. Read
	// before LISTEN, which pg_stat_activity then shows as the listener's
	// query. current_setting, not the view pg_settings, whose read spills
	// to a temporary file under a tiny work_mem and fails under as tiny a
	// temp_file_limit.
	var idle, backend int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM current_setting('idle_session_timeout', true)::interval) * 1000, 0)::bigint, pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&idle, &backend); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: listen for sends: read idle_session_timeout: %w", err)
	}
	if backend != int64(conn.PgConn().PID()) {
		// A pooler or proxy answered the connection's start with a key
		// of its own.
		if err := s.keepsSession(ctx, conn, backend); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{notifyChannel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: listen for sends: LISTEN: %w", err)
	}
	return &Listener{conn: conn, s: s, every: time.Duration(idle) * time.Millisecond / 2, spoke: time.Now()}, nil
}

// keepsSession checks that conn, a connection through a pooler whose last
// statement ran in the server process backend, keeps that server
// connection, as it does through a pooler in session mode: it returns
// errSessionNotKept when another client of the pooler (a connection of the
// pool) gets that server process while conn is idle, or when conn, the
// other client holding a transaction meanwhile, gets another one. Through
// a pooler in transaction mode the other client mostly gets it at once:
// the pooler hands out the server connection released last. Either way
// conn's statements leave nothing on the server connection.
func (s *Store) keepsSession(ctx context.Context, conn *pgx.Conn, backend int64) error {
	for range sessionChecks {
		tx, err := s.db.Begin(ctx)
		if err != nil {
			return fmt.Errorf("store: listen for sends: check which server connections the pooler gives it: %w", err)
		}
		var other, again int64
		err = tx.QueryRow(ctx, `SELECT pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&other)
		if err == nil && other != backend {
			err = conn.QueryRow(ctx, `SELECT pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&again)
		}
		_ = tx.Rollback(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("store: listen for sends: check which server connections the pooler gives it: %w", err)
		case other == backend, again != backend:
			return fmt.Errorf("store: listen for sends: %w", errSessionNotKept)
		}
	}
	return nil
}

// CheckDelivery sends a notification of its own through the store's pool,
// as a send does, and waits up to wait for the listener to receive it. It
// returns an error wrapping ErrNoDelivery when the notification does not
// arrive in time while the listener's connection answers, and other errors
// when the check could not be made (a lost or silent connection: Close and
// Listen again). Notifications of sends that arrive meanwhile are dropped:
// read every queue after the check.
func (l *Listener) CheckDelivery(ctx context.Context, wait time.Duration) error {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	token := probePrefix + hex.EncodeToString(b)
	if _, err := l.s.db.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, token); err != nil {
		return fmt.Errorf("store: check that notifications arrive: send one: %w", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		n, err := l.waitForNotification(waitCtx)
		switch {
		case err == nil && n.Payload == token:
			return nil
		case err == nil:
			continue
		case ctx.Err() == nil && waitCtx.Err() != nil:
			return l.noDelivery(ctx, wait)
		default:
			return err
		}
	}
}

// noDelivery is the error of a check whose notification did not arrive
// within wait: ErrNoDelivery when the listener's connection answers, as
// behind a pooler; the connection's own error when it does not, as after
// a failover behind a proxy or on a frozen path, which deliver nothing
// either but are no reason to give up notifications. The connection gets
// at most wait to answer.
func (l *Listener) noDelivery(ctx context.Context, wait time.Duration) error {
	pingCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := l.conn.Ping(pingCtx); err != nil {
		return fmt.Errorf("store: check that notifications arrive: the check's notification did not arrive within %s, and the listener's connection does not answer: %w", wait, err)
	}
	l.spoke = time.Now()
	return fmt.Errorf("store: %w: the check's notification did not arrive within %s", ErrNoDelivery, wait)
}

// WaitForSend blocks until a send notifies and returns the physical queue
// name it sent to. It returns an error when ctx ends or the connection is
// lost; after a lost connection, Close the listener and Listen again.
func (l *Listener) WaitForSend(ctx context.Context) (queue string, err error) {
	for {
		n, err := l.waitForNotification(ctx)
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(n.Payload, probePrefix) { // a late check of this or another process
			return n.Payload, nil
		}
	}
}

// waitForNotification waits for the next notification, telling the server
// the session is in use as often as its idle_session_timeout needs.
func (l *Listener) waitForNotification(ctx context.Context) (*pgconn.Notification, error) {
	if l.every <= 0 {
		return l.conn.WaitForNotification(ctx)
	}
	for {
		// The server counts idle time from the last statement, however
		// many notifications came since.
		waitCtx, cancel := context.WithDeadline(ctx, l.spoke.Add(l.every))
		n, err := l.conn.WaitForNotification(waitCtx)
		quiet := errors.Is(waitCtx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil || ctx.Err() != nil || !quiet {
			return n, err
		}
		if _, err := l.conn.Exec(ctx, "SELECT 1"); err != nil {
			return nil, err
		}
		l.spoke = time.Now()
	}
}

// Close closes the listener's connection.
func (l *Listener) Close(ctx context.Context) error {
	return l.conn.Close(ctx)
}
