package store

import (
	"context"
	"fmt"
	"strconv"
)

// ConnLimits are the limits PostgreSQL sets on the connections of the
// role a Store logs in as (its CONNECTION LIMIT, ALTER ROLE) and of its
// database (ALTER DATABASE ... CONNECTION LIMIT). A connection past
// either is refused (SQLSTATE 53300, too_many_connections).
type ConnLimits struct {
	// Role is the role the session logged in as.
	Role string
	// RoleLimit is the role's CONNECTION LIMIT, -1 for none.
	RoleLimit int
	// Database is the database connected to.
	Database string
	// DatabaseLimit is the database's CONNECTION LIMIT, -1 for none.
	DatabaseLimit int
	// Superuser is set for a superuser role, to which neither limit
	// applies.
	Superuser bool
	// Direct reports whether the Store talks to the server itself: the
	// port its URL names is the server's. Through a connection pooler
	// (PgBouncer) or a proxy on another port, the limits count the
	// pooler's connections to the server, not the Store's to the pooler.
	Direct bool
}

// Room is how many connections the limits let the role hold on the
// database at once, counting every process's, or -1 when nothing limits
// them (no limit set, or a superuser).
func (l ConnLimits) Room() int {
	if l.Superuser {
		return -1
	}
	room := -1
	for _, limit := range []int{l.RoleLimit, l.DatabaseLimit} {
		if limit >= 0 && (room < 0 || limit < room) {
			room = limit
		}
	}
	return room
}

// ByRole reports whether the role's limit is the one Room is, rather
// than the database's.
func (l ConnLimits) ByRole() bool {
	return l.RoleLimit >= 0 && (l.DatabaseLimit < 0 || l.RoleLimit <= l.DatabaseLimit)
}

// ConnLimits reads the connection limits of the role the Store logs in
// as and of its database, which every role may read (pg_roles,
// pg_database).
func (s *Store) ConnLimits(ctx context.Context) (ConnLimits, error) {
	var l ConnLimits
	var port string
	err := s.reads.QueryRow(ctx, `SELECT r.rolname, r.rolconnlimit, r.rolsuper, d.datname, d.datconnlimit, current_setting('port')
		FROM pg_roles r, pg_database d
		WHERE r.rolname = session_user AND d.datname = current_database()`).
		Scan(&l.Role, &l.RoleLimit, &l.Superuser, &l.Database, &l.DatabaseLimit, &port)
	if err != nil {
		return ConnLimits{}, fmt.Errorf("store: read the connection limits of the role and database: %w", err)
	}
	l.Direct = port == strconv.Itoa(int(s.target().Port))
	return l, nil
}

// PoolSize is how many connections the Store's pool holds at most; 0
// for a Store without a pool.
func (s *Store) PoolSize() int {
	if s.pool == nil {
		return 0
	}
	return int(s.pool.Config().MaxConns)
}

// Resized is s opened again as OpenLazyFrom opened it (its URL, its
// application_name, the source of its URL read again), but with a pool of
// up to maxConns connections, whatever the URL's pool_max_conns says: for
// a process that learned, once connected, that its role or database
// allows fewer connections than its pool would open. It connects as
// OpenLazyFrom does, lazily; s is left open, for its caller to close.
// A Store New made over a pool of the caller's cannot be resized.
func (s *Store) Resized(maxConns int32) (*Store, error) {
	if s.opened == nil {
		return nil, invalidf("the Store was not opened by store.Open or store.OpenLazy, so it cannot be opened again with another pool size: size the pool given to store.New instead")
	}
	if maxConns < 1 {
		return nil, invalidf("a pool of %d connections holds none: give it 1 at least", maxConns)
	}
	return openLazy(s.opened.url, s.opened.app, s.opened.again, maxConns)
}

// RaiseSQL is the statement that raises the limit Room is to n, for
// advice: ALTER ROLE, or ALTER DATABASE when the database's is the lower.
func (l ConnLimits) RaiseSQL(n int) string {
	if l.ByRole() {
		return fmt.Sprintf("ALTER ROLE %s CONNECTION LIMIT %d", RoleSQL(l.Role), n)
	}
	return fmt.Sprintf("ALTER DATABASE %s CONNECTION LIMIT %d", RoleSQL(l.Database), n)
}
