package store

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sockets are the network connections of a Store's pool, and of the
// connections made with its settings (Listen's, diagnose's), so that Close
// can end those pgx gave up on.
//
// A statement given up at its context's end (the database call timeout, a
// stop) leaves pgx closing its connection in the background: it asks the
// server to cancel the statement, sends its goodbye and reads whatever
// the server still sends until the server closes the connection, for up
// to 15 seconds, which no setting of pgx's changes. A server or pooler
// that does not answer (PgBouncer paused, which reads nothing more from a
// client whose statement waits) holds it that long, and the pool's Close
// waits for every connection it destroyed to finish closing: a command or
// server behind a paused PgBouncer exited 15 seconds after its error or
// its stop.
//
// Once the Store closes, Close ends at once the sockets of connections
// the pool destroyed (given up, or being closed). A connection whose
// session is live (one in use, whose caller may be committing, an idle
// one, which the pool closes with its goodbye, a listener) is left alone:
// nothing it writes is cut. So are logins under way and cancel requests:
// PgBouncer 1.18 crashes when a cancel request's connection ends while it
// handles it.
type sockets struct {
	mu      sync.Mutex
	open    map[*socket]struct{}
	closing atomic.Bool
}

// socket is one network connection of a Store's.
type socket struct {
	net.Conn
	set *sockets
	// session is set once the connection's login ended (a connection, not
	// a cancel request or a login under way); retired once the pool
	// destroyed the connection: nobody sends a statement on it since.
	session, retired atomic.Bool
	closeOnce        sync.Once
	closeErr         error
}

// trackSockets makes the connections of cfg tracked by a new set of
// sockets, which it returns: the pool's dial, the login's end and the
// pool's destruction of a connection are noted.
func trackSockets(cfg *pgxpool.Config) *sockets {
	set := &sockets{open: map[*socket]struct{}{}}
	conn := cfg.ConnConfig
	dial := conn.DialFunc
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	conn.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return set.add(c), nil
	}
	afterConnect := conn.AfterConnect
	conn.AfterConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
		if s := socketOf(pc.Conn()); s != nil {
			s.session.Store(true)
		}
		if afterConnect != nil {
			return afterConnect(ctx, pc)
		}
		return nil
	}
	beforeClose := cfg.BeforeClose
	cfg.BeforeClose = func(c *pgx.Conn) {
		if beforeClose != nil {
			beforeClose(c)
		}
		s := socketOf(c.PgConn().Conn())
		if s == nil {
			return
		}
		s.retired.Store(true)
		// Closed already, by pgx's giving up: its close in the background
		// is under way, and may wait 15 seconds for the server.
		if set.closing.Load() && c.PgConn().IsClosed() {
			_ = s.Close()
		}
	}
	return set
}

// socketOf is the tracked socket under c (a TLS connection's included),
// nil for one not tracked.
func socketOf(c net.Conn) *socket {
	for c != nil {
		switch v := c.(type) {
		case *socket:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

func (set *sockets) add(c net.Conn) *socket {
	s := &socket{Conn: c, set: set}
	set.mu.Lock()
	set.open[s] = struct{}{}
	set.mu.Unlock()
	return s
}

// close marks the set closing and ends the sockets of the connections the
// pool destroyed (see sockets).
func (set *sockets) close() {
	set.closing.Store(true)
	set.mu.Lock()
	var end []*socket
	for s := range set.open {
		if s.abandoned() {
			end = append(end, s)
		}
	}
	set.mu.Unlock()
	for _, s := range end {
		_ = s.Close()
	}
}

// abandoned reports whether s holds a session the pool destroyed.
func (s *socket) abandoned() bool { return s.session.Load() && s.retired.Load() }

func (s *socket) Write(p []byte) (int, error) {
	n, err := s.Conn.Write(p)
	if s.set.closing.Load() && s.abandoned() {
		_ = s.Close()
	}
	return n, err
}

func (s *socket) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.Conn.Close()
		s.set.mu.Lock()
		delete(s.set.open, s)
		s.set.mu.Unlock()
	})
	return s.closeErr
}
