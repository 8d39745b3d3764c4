package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// URLSource gives the database URL as it is now: for a Store that reads it
// again for each new connection (OpenLazyFrom), such as from the file a
// deploy mounts a secret in, which a rotation of the secret rewrites.
type URLSource func() (string, error)

// reread gives each new connection of a Store the address and login of
// the URL its source gives then.
type reread struct {
	again URLSource

	mu   sync.Mutex
	last string        // the URL the source gave last
	now  pgconn.Config // the address and login of last (target's fields)
}

// newReread is a reread whose source gave url first, which cfg was parsed
// from.
func newReread(url string, cfg *pgx.ConnConfig, again URLSource) *reread {
	r := &reread{again: again, last: url}
	takeTarget(&r.now, &cfg.Config)
	return r
}

// takeTarget copies the address and login of from into to: what a URL
// read again may change for the connections made from then on. The
// session's settings, the dial and the hooks stay to's.
func takeTarget(to, from *pgconn.Config) {
	to.Host, to.Port, to.Database = from.Host, from.Port, from.Database
	to.User, to.Password = from.User, from.Password
	to.TLSConfig, to.Fallbacks = from.TLSConfig, from.Fallbacks
	to.ValidateConnect = from.ValidateConnect
	to.KerberosSrvName, to.KerberosSpn = from.KerberosSrvName, from.KerberosSpn
}

// apply reads the URL again and gives cc, the configuration of a
// connection about to be made, its address and login. It is the pool's
// BeforeConnect.
func (r *reread) apply(_ context.Context, cc *pgx.ConnConfig) error {
	url, err := r.again()
	if err != nil {
		return &rereadError{err: err}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if url != r.last {
		parsed, err := pgx.ParseConfig(url)
		if err != nil {
			return &rereadError{err: urlError(url, err)}
		}
		if strings.Contains(parsed.Host, "@") {
			return &rereadError{err: errors.New("the database URL's host holds an @: percent-encode an @ in the password as %40 (and a : as %3A, a / as %2F)")}
		}
		r.last = url
		takeTarget(&r.now, &parsed.Config)
	}
	takeTarget(&cc.Config, &r.now)
	return nil
}

// current is the address and login the last connection was given.
func (r *reread) current() pgconn.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// target is the address and login of the store's connections: those of
// its URL as it was read last.
func (s *Store) target() pgconn.Config {
	switch {
	case s.reread != nil:
		return s.reread.current()
	case s.pool == nil:
		return pgconn.Config{}
	}
	return s.pool.Config().ConnConfig.Config
}

// rereadError is a connection not made because the database URL could
// not be read again (OpenLazyFrom).
type rereadError struct{ err error }

func (e *rereadError) Error() string {
	return fmt.Sprintf("store: read the database URL again for a new connection: %v", e.err)
}

func (e *rereadError) Unwrap() error { return e.err }

// rereadAdvice is Advice for a rereadError, which names nothing of the
// database.
const rereadAdvice = "the database URL could not be read again for a new connection (the process's log says why): mend where it is read from, such as the file that holds it"
