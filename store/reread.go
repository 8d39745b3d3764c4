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

// takeTarget gives to the address and login of from: what a URL read
// again may change for the connections made from then on (host, port,
// database, user, password, TLS and authentication settings,
// target_session_attrs). The session's settings, the dial and the hooks
// stay to's. to takes a copy of from whole and gets those back, rather
// than from's fields one by one: pgx keeps, out of sight beside from's TLS
// settings, the client certificate files it reads at each connection,
// which only a copy of the whole carries.
func takeTarget(to, from *pgconn.Config) {
	keep := *to
	*to = *from.Copy()
	to.ConnectTimeout, to.DialFunc, to.LookupFunc = keep.ConnectTimeout, keep.DialFunc, keep.LookupFunc
	to.BuildFrontend, to.BuildContextWatcherHandler = keep.BuildFrontend, keep.BuildContextWatcherHandler
	to.MaxProtocolMessageBodyLen, to.RuntimeParams = keep.MaxProtocolMessageBodyLen, keep.RuntimeParams
	to.AfterNetConnect, to.AfterConnect = keep.AfterNetConnect, keep.AfterConnect
	to.OnNotice, to.OnNotification, to.OnPgError = keep.OnNotice, keep.OnNotification, keep.OnPgError
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
