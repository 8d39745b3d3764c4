// Package startwait waits out, across the start-up steps of a process
// (the engine's Run, and the steps before it that create a process's
// queues), a database that does not answer or has no connection to give,
// saying it in the same words wherever it waits.
package startwait

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// crowdedWait is how long the start-up steps wait, all told, for a
// server that refuses new connections for having as many as it allows
// (SQLSTATE 53300: max_connections, or the role's or database's
// CONNECTION LIMIT), as a program opening its database waits for the
// first: in a deploy the processes being replaced let theirs go as they
// stop.
const crowdedWait = time.Minute

// maxPause is the longest pause between two tries of a start-up
// step that failed for a database that does not answer, or that has no
// connection to give.
const maxPause = 5 * time.Second

// Wait waits out, across the start-up steps of a process, a database
// that does not answer, or that has no connection to give. Make one with
// New for all the steps of one start; it is not safe for concurrent use.
type Wait struct {
	log *slog.Logger
	// crowdedUntil is when a server that refuses new connections for
	// having as many as it allows is given up on.
	crowdedUntil time.Time
	// down is when the database was found not to answer, zero while it
	// answers.
	down time.Time
	// held names the sessions holding locks on pgbus's and PGMQ's tables
	// when a step got no answer in time; nil asks nothing.
	held LockHolders
	// locked is the holder last said to keep a step waiting, "" while
	// none is.
	locked string
	// poolBusy is set once a step was said to wait for a connection of
	// the pool (store.ErrConnectionWait), until one succeeds.
	poolBusy bool
	// connected reports whether the store the steps use ever logged in;
	// nil for never.
	connected func() bool
	// refused is set once a step was said to wait for the database to
	// take the role's logins again, until one succeeds.
	refused bool
}

// LockHolders says, for a step that got no answer within its bound,
// whether the database answers a question asked now and, when it does,
// names the sessions holding locks on pgbus's and PGMQ's tables with the
// statement that ends each ("" for none), as ops.Service.SlowRead does.
type LockHolders func(ctx context.Context) (heldBy string, answered bool)

// New returns the wait of one start, which says what it waits for to
// log (none: nothing is said). held, when not nil, is asked who holds
// the tables a step waited for, so that a lock is said as one rather than
// as a database that does not answer; connected reports whether the
// store the steps use ever logged in (Store.HasConnected), so that a login
// refused after one was taken is waited out as a rotation.
func New(log *slog.Logger, held LockHolders, connected func() bool) *Wait {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Wait{log: log, crowdedUntil: time.Now().Add(crowdedWait), held: held, connected: connected}
}

// Do runs step, one start-up step, again with a growing pause, up to a
// few seconds, while it fails for a database that does not answer (down
// or restarting, PgBouncer restarting, a connection cut or silent past
// the database call timeout), for as long as it does, as the workers ride
// out an outage once running: said once per outage at WARN, and its end
// at INFO; and while it waits for a connection of a pool every one of
// which other calls hold (store.ErrConnectionWait), on a database that
// answers. It does so too while the server refuses new connections for
// having as many as it allows, up to a minute over the whole start, then
// fails with what to do about it; and while the server refuses the
// role's login after connected says it took one (a password rotated under
// a starting process). A login refused before any was taken fails at once,
// with what to check. Each step must read, or write what is
// the same when written twice. Any other error is returned at once, as is
// every error once ctx ended (wrapping ctx's error) or the store was
// closed.
func (w *Wait) Do(ctx context.Context, step func(context.Context) error) error {
	delay := 250 * time.Millisecond
	for {
		err := step(ctx)
		switch {
		case err == nil:
			if !w.down.IsZero() {
				w.log.Info("pgbus: the database answers again; starting goes on", "after", time.Since(w.down).Round(100*time.Millisecond).String())
				w.down = time.Time{}
			}
			if w.locked != "" {
				w.log.Info("pgbus: the lock that held starting back is gone; starting goes on")
				w.locked = ""
			}
			if w.poolBusy {
				w.log.Info("pgbus: a connection of the pool was free; starting goes on")
				w.poolBusy = false
			}
			if w.refused {
				w.log.Info("pgbus: the database takes the role's connections again; starting goes on")
				w.refused = false
			}
			return nil
		case ctx.Err() != nil, errors.Is(err, store.ErrClosed):
			return err
		case loginRefused(err) && (w.connected == nil || !w.connected()):
			// Never taken: a wrong password or role, which no wait mends.
			if advice := store.Advice(err); advice != "" && !strings.Contains(err.Error(), advice) {
				return fmt.Errorf("%w; %s", err, advice)
			}
			return err
		case loginRefused(err):
			// Taken before: a password rotated, or the role shut out,
			// while the process starts, as the workers wait it out once
			// running.
			if !w.refused {
				w.refused = true
				w.log.Warn("pgbus: the database refuses this role's new connections, having taken them before (its password changed, or pg_hba.conf no longer lets it in from here); starting waits until it takes them, trying every few seconds: "+
					"put the role's current password in the database URL, or have the DBA let the role in again", "err", err)
			} else {
				w.log.Debug("pgbus: the database still refuses this role's new connections; starting tries again", "in", delay, "err", err)
			}
		case store.IsCrowded(err):
			if time.Now().Add(delay).After(w.crowdedUntil) {
				return fmt.Errorf("%w; waited %s for a connection: %s", err, crowdedWait, store.CrowdedAdvice)
			}
			w.log.Warn("pgbus: PostgreSQL has as many connections as it allows, and refuses more; starting waits until other clients let theirs go. To end it, "+store.CrowdedAdvice,
				"err", err, "in", delay, "until", w.crowdedUntil.Format(time.RFC3339))
		case errors.Is(err, store.ErrConnectionWait):
			// The database answers; every connection of the pool is
			// held by other calls, a program sharing it among them.
			if !w.poolBusy {
				w.poolBusy = true
				w.log.Warn("pgbus: starting waits for a connection of the pool, every one of which is in use (by the program sharing the pool: its open transactions, its long statements); the database answers; starting tries again every few seconds: give the pool more connections (pool_max_conns in the database URL), or hold fewer of them at once",
					"err", err)
			} else {
				w.log.Debug("pgbus: every connection of the pool is still in use; starting tries again", "in", delay, "err", err)
			}
		case !store.IsUnreachable(err) && errors.Is(err, context.DeadlineExceeded) && w.heldBy(ctx) != "":
			// The database answers, and another session holds a table
			// the step reads: said once per holder, with what ends it.
		case store.IsUnreachable(err) || errors.Is(err, context.DeadlineExceeded): // down, or silent past the call timeout
			// A server just back may be crowded by every client coming
			// back with it: the wait for a connection starts afresh.
			w.crowdedUntil = time.Now().Add(crowdedWait)
			if w.down.IsZero() {
				w.down = time.Now()
				msg := "pgbus: the database does not answer (" + store.UnansweredCauses + "); starting waits until it answers, trying every few seconds"
				if advice := store.DatabaseAdvice(err); advice != "" && !strings.Contains(err.Error(), advice) {
					msg += ": " + advice
				}
				w.log.Warn(msg, "err", err)
			} else {
				w.log.Debug("pgbus: the database still does not answer; starting tries again", "in", delay, "err", err)
			}
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: stopped waiting for the database: %v", ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, maxPause)
	}
}

// loginRefused reports whether err is the database refusing the role's
// login (SQLSTATE class 28: a wrong password, a role it does not let in).
func loginRefused(err error) bool {
	code, _ := store.SQLState(err)
	return store.Refused(err) && strings.HasPrefix(code, "28")
}

// heldBy names, when held says so, the sessions holding locks on
// pgbus's and PGMQ's tables that kept a step waiting, logging them when
// they differ from those said last; "" when the database does not answer
// or no session holds one, and the step's wait is an outage.
func (w *Wait) heldBy(ctx context.Context) string {
	if w.held == nil {
		return ""
	}
	heldBy, answered := w.held(ctx)
	if !answered || heldBy == "" {
		return ""
	}
	if heldBy != w.locked {
		w.log.Warn("pgbus: starting waits for a lock another session holds on pgbus's or PGMQ's tables, trying every few seconds; it goes on once that session ends its transaction",
			"held_by", heldBy)
		w.locked = heldBy
	}
	return heldBy
}
