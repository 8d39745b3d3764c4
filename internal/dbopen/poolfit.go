package dbopen

import (
	"context"
	"fmt"

	"github.com/pgbus/pgbus/store"
)

// FitPool compares the pool of d, whose database answers, with the
// connection limits of the role it logs in as and of its database (their
// CONNECTION LIMIT): when the pool and the connection a process opens
// beside it (listening for sends) would pass the lower, it opens the
// database again with a pool one smaller than that limit, so that the
// process never asks for a connection the server refuses, and warns once,
// naming the limit, the pool's size and what to do: raise the limit, or
// lower the pool's size (pool_max_conns in the database URL). Only a
// Store no one uses yet may be fitted: call it right after Connect (which
// does) or Dial and a Ping that succeeded. A server reached through a
// pooler or proxy (another port than the server's) is left as it is: its
// limits count the pooler's connections. A limit that cannot be read says
// nothing: the check is advice. Only a process whose pool is in use
// (Options.PoolInUse) is warned; a one-shot command's pool is fitted all
// the same, said at debug level.
func (d *DB) FitPool(ctx context.Context) {
	fit := fitNow
	if d.Embedded != nil {
		fit = fitNever
	}
	d.checkPool(ctx, fit)
}

// poolFit says whether checkPool may open the database again with a
// smaller pool.
type poolFit int

const (
	// fitNow opens it again, for a Store no one uses yet.
	fitNow poolFit = iota
	// fitNever leaves the pool as it is, saying nothing of a restart
	// (the embedded server's).
	fitNever
	// fitAtRestart leaves the pool, in use already (a server that began
	// before its database answered), as it is, and says that a restart
	// fits it.
	fitAtRestart
)

// checkPool is FitPool, which opens the database again with a smaller
// pool only when fit is fitNow; otherwise it only warns.
func (d *DB) checkPool(ctx context.Context, fit poolFit) {
	if d.poolChecked || d.Store == nil {
		return
	}
	d.poolChecked = true
	if d.callTimeout > 0 {
		ctx = store.WithStatementTimeout(ctx, d.callTimeout)
	}
	limits, err := d.ConnLimits(ctx)
	room := limits.Room()
	size := d.PoolSize()
	if err != nil || !limits.Direct || room < 0 || size+1 <= room {
		return
	}
	fitted := max(1, room-1)
	resized := false
	if fit == fitNow && fitted < size {
		if s, err := d.Resized(int32(fitted)); err == nil {
			d.Store.Close()
			d.Store = s
			_ = d.Ping(ctx) // a lazy Store connects at its first statement otherwise
			resized = true
		}
	}
	switch {
	case d.logger == nil:
	case d.poolInUse:
		d.logger.Warn(poolWarning(limits, size, fitted, resized, fit == fitAtRestart, d.urlWords), poolAttrs(limits, size)...)
	default:
		// One statement or two, on one connection: the limit is no
		// matter for this process.
		d.logger.Debug(poolWarning(limits, size, fitted, resized, fit == fitAtRestart, d.urlWords), poolAttrs(limits, size)...)
	}
}

// poolWarning is the warning of a pool of size connections whose process
// would pass the lower of limits' connection limits, the pool now fitted
// to fitted when resized; atRestart says it is fitted only when the
// process starts again on a database that answers.
func poolWarning(limits store.ConnLimits, size, fitted int, resized, atRestart bool, urlWords string) string {
	if urlWords == "" {
		urlWords = "the database URL"
	}
	whose := "the role " + limits.Role
	if !limits.ByRole() {
		whose = "the database " + limits.Database
	}
	msg := fmt.Sprintf("pgbus: %s allows %d connections at once (its CONNECTION LIMIT), counting every process's, but this process's pool holds up to %d, and it opens one more beside it (listening for sends): connections past the limit are refused. ",
		whose, limits.Room(), size)
	switch {
	case resized:
		msg += fmt.Sprintf("Its pool holds up to %d meanwhile, and its calls wait for one of them. ", fitted)
	case atRestart:
		msg += fmt.Sprintf("The process began before the database answered, so its pool, in use already, keeps its size: its calls that need a connection the server refuses fail and are tried again. Restarting it while the database answers fits its pool to %d at start. ", fitted)
	default:
		msg += "Its calls that need a connection the server refuses fail and are tried again. "
	}
	return msg + fmt.Sprintf("To end it, raise the limit to at least %d for each pgbus process (%s), or lower the pool's size with pool_max_conns in %s (e.g. ?pool_max_conns=%d), leaving room for the other processes the limit counts",
		size+2, limits.RaiseSQL(size+2), urlWords, fitted)
}

// poolAttrs are the warning's values as attributes.
func poolAttrs(limits store.ConnLimits, size int) []any {
	attrs := []any{"connection_limit", limits.Room(), "pool_max_conns", size}
	if limits.ByRole() {
		attrs = append(attrs, "role", limits.Role)
	} else {
		attrs = append(attrs, "database", limits.Database)
	}
	return attrs
}
