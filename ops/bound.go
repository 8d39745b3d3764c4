package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// callBound is how one call of the service bounds its database work
// (Options.DatabaseCallTimeout), kept in the call's context so that the
// end of the call can tell a call given up for want of an answer from
// one its caller stopped.
type callBound struct {
	outer context.Context // the caller's context
	limit time.Duration
	// lockWait bounds each wait of a read for a lock
	// (Options.ReadLockWait, store.WithLockWait); 0 for none.
	lockWait time.Duration
	// health marks the bound of a health check (HealthCheckTimeout),
	// shorter than the call timeout: its errors say so, and what to
	// check.
	health bool
	// beforeWrite marks the reads a write call makes before it writes
	// (readsFirst): their errors say that nothing was changed.
	beforeWrite bool
}

// name says what limit is, for the errors of a call it gave up.
func (b *callBound) name() string {
	if b.health {
		return "the health check's own bound"
	}
	return "database call timeout"
}

type callBoundKey struct{}

// bound bounds the database work of one call made with ctx. A connection
// that stops answering without being closed (a failover behind a proxy, a
// frozen server, a cut network path) would otherwise hold the call, and
// the person or agent waiting on it, for as long as TCP keeps it: hours.
// A read is bounded as a whole; a write one statement at a time
// (store.WithStatementTimeout), since a bulk move of many batches may take
// long on a healthy database, and a statement cut by its bound rolls its
// transaction back or, its commit already sent, leaves it done whole. A
// call made inside another keeps the outer call's bound.
//
// A read's waits for locks are bounded too, shorter
// (Options.ReadLockWait): a table another session holds locked would
// otherwise keep every read of it, and the connection each holds, for
// the whole bound, and a few pages or an agent's parallel calls would
// hold every connection of the pool the workers share (lockWaitError).
func (s *Service) bound(ctx context.Context, e effect) (context.Context, context.CancelFunc) {
	return s.boundBy(ctx, e, &callBound{outer: ctx, limit: s.opts.DatabaseCallTimeout})
}

// HealthCheckTimeout bounds the database work of a health check
// (Service.HealthOrSlow, Service.HealthOrUnreachable) where it is shorter
// than Options.DatabaseCallTimeout. A health check is asked for when
// something is wrong, and must answer then: a statement that reaches no
// server that answers it (PostgreSQL gone down behind PgBouncer, sent
// before PgBouncer's first failed connect; a paused PgBouncer; a frozen
// server or network path) would otherwise hold it for the whole call
// timeout, 30s by default. Its reads take milliseconds on a healthy
// database; 5s is the bound /readyz gives the same reads before it calls
// the check slow, and leaves a busy database room to answer. Past it the
// check asks a new connection, within a few more seconds, whether the
// database answers at all: one that does is a slow check (DEGRADED,
// health_check_slow), one that does not an outage (UNREACHABLE).
const HealthCheckTimeout = 5 * time.Second

// unansweredAdvice is what to check about a database that did not answer
// a health check in time.
const unansweredAdvice = store.UnansweredAdvice

// healthBound is bound for a health check: its reads bounded by
// HealthCheckTimeout, or by the call timeout when that is shorter.
func (s *Service) healthBound(ctx context.Context) (context.Context, context.CancelFunc) {
	b := &callBound{outer: ctx, limit: s.opts.DatabaseCallTimeout}
	if HealthCheckTimeout < b.limit {
		b.limit, b.health = HealthCheckTimeout, true
	}
	return s.boundBy(ctx, reads, b)
}

// boundBy is bound with the bound b: a call made inside another keeps the
// outer call's bound.
func (s *Service) boundBy(ctx context.Context, e effect, b *callBound) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Value(callBoundKey{}).(*callBound); ok {
		return ctx, func() {}
	}
	ctx = context.WithValue(ctx, callBoundKey{}, b)
	if e == reads {
		if w := s.opts.ReadLockWait; w > 0 && w < b.limit {
			b.lockWait = w
			ctx = store.WithLockWait(ctx, w)
		}
		return context.WithTimeout(ctx, b.limit)
	}
	return store.WithStatementTimeout(ctx, b.limit), func() {}
}

// readsFirst is ctx, of a write call, for the reads it makes before it
// writes (what a drop or purge would delete): bounded as a read's are,
// each wait for a lock by Options.ReadLockWait, and explained, once,
// as reads that changed nothing, since the write never began.
func (s *Service) readsFirst(ctx context.Context) context.Context {
	b, ok := ctx.Value(callBoundKey{}).(*callBound)
	if !ok || b.beforeWrite {
		return ctx
	}
	first := *b
	first.beforeWrite = true
	if w := s.opts.ReadLockWait; w > 0 && w < first.limit && first.lockWait == 0 {
		first.lockWait = w
		ctx = store.WithLockWait(ctx, w)
	}
	return context.WithValue(ctx, callBoundKey{}, &first)
}

// nothingChanged says that a call given up in its reads before its write
// changed nothing.
const nothingChanged = "nothing was changed: the call stopped at its read of what it would change, before it wrote anything"

// givenUp reports whether err, the error of a call made with ctx, is the
// call given up by its bound: its bound passed while its caller still
// waited.
func givenUp(ctx context.Context, err error) (*callBound, bool) {
	b, ok := ctx.Value(callBoundKey{}).(*callBound)
	if !ok || err == nil || b.outer.Err() != nil {
		return nil, false
	}
	return b, errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// callerCancelled reports whether the context the caller gave the call
// made with ctx was cancelled (not the call's own bound).
func callerCancelled(ctx context.Context) bool {
	if b, ok := ctx.Value(callBoundKey{}).(*callBound); ok {
		ctx = b.outer
	}
	return errors.Is(ctx.Err(), context.Canceled)
}

// callerDeadlinePassed reports whether the deadline of the context the
// caller gave the call made with ctx has passed (not the call's own bound).
func callerDeadlinePassed(ctx context.Context) bool {
	if b, ok := ctx.Value(callBoundKey{}).(*callBound); ok {
		ctx = b.outer
	}
	return errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// dropIfGivenUp drops the pool's frozen connections when err, of one
// step of a call made with ctx that goes on to its next steps (a move
// from one DLQ of several), is that step given up by the call's bound:
// the next steps then connect afresh rather than meet another frozen
// connection, a bound each.
func (s *Service) dropIfGivenUp(ctx context.Context, err error) {
	if b, ok := givenUp(ctx, err); ok {
		s.store.DropFrozenConnections(time.Now().Add(-b.limit))
	}
}

// unansweredError is err, a call given up by its bound b for want of an
// answer, with what that means for the call and what to do. The pool's
// connections are dropped first (a frozen path froze them all); then a
// fresh connection asks, within a few seconds, whether another session
// holds a lock on pgbus's or PGMQ's tables: a call that waited for one (a
// LOCK TABLE, a VACUUM FULL, a transaction left open) is told so, with
// who holds it, rather than as a database that does not answer, which
// the health check would then contradict; and a call given up while that
// fresh connection is answered at once says that its own connection was
// cut or that it is too big for the bound (a text filter over millions of
// dead messages), which a narrower request or a longer timeout mends,
// or, when every connection of the pool was in use by other calls, that
// it may have waited for one of them: the database answers, and a call
// on another queue would wait alike.
func (s *Service) unansweredError(b *callBound, err error, e effect) error {
	// The call given up, or its statement, began a bound ago.
	s.store.DropFrozenConnections(time.Now().Add(-b.limit))
	busy, size := s.store.PoolExhausted()
	partial, _ := partialCause(err)
	inner := err
	if partial != nil {
		inner = *partial
	}
	name := b.name()
	what := fmt.Sprintf("the database did not answer within %s (%s), so the call was given up and its connections closed: "+
		"a failover, a frozen server or a cut network path leaves connections open but silent, and a database this slow when healthy needs a longer timeout (%v)", b.limit, name, inner)
	again := "the next call connects afresh: try it again once the database answers"
	if b.health {
		what = fmt.Sprintf("the database did not answer the health check within %s (%s, shorter than the call timeout of %s so that it answers while the database is in trouble), so the check was given up and its connections closed: "+
			"PostgreSQL is down, restarting or frozen, or a network path or a connection pooler (PgBouncer) in front of it holds the statements unanswered (%v)", b.limit, name, s.opts.DatabaseCallTimeout, inner)
		again = unansweredAdvice + "; then check again: the next check connects afresh"
	}
	hints := []Hint{hint(OpHealth, "says whether the database answers again")}
	var slow error // the database answers: what the call waited for instead
	switch heldBy, end, answered := s.lockHolders(b); {
	case heldBy != "":
		what = fmt.Sprintf("the call waited %s (%s) for a lock another session holds on pgbus's tables, and was given up: %s (%v)", b.limit, name, heldBy, inner)
		if busy {
			what = fmt.Sprintf("the call waited %s (%s) for a lock another session holds on pgbus's tables, or for a connection while %s, "+
				"and was given up: %s (%v)", b.limit, name, poolBusy(size, "were", "calls that wait for that lock hold theirs until it goes or their own timeout passes"), heldBy, inner)
		}
		again = "try it again once that session ends its transaction; if it is stuck, end it: " + end
		hints, slow = nil, ErrLockWait
	case answered && busy:
		// Every connection of the pool was taken by other calls, which
		// a new connection, answered at once, shows are no outage.
		what = fmt.Sprintf("the call waited %s (%s) for a connection and was given up, though a new connection is answered at once: %s (%v)",
			b.limit, name, poolBusy(size, "were", "long calls, or ones a busy database answers slowly, hold them"), inner)
		again = "try it again once fewer calls run at once, or give the process a larger pool"
		hints, slow = nil, errPoolBusy
	case answered && b.health:
		// The check is slower than its bound on a database that answers:
		// overloaded, or its reads slowed by a long statement.
		what = fmt.Sprintf("the health check did not finish within %s (%s), though a new connection is answered at once: "+
			"the database is overloaded, or a long statement slows the check's reads (%v)", b.limit, name, inner)
		again = "check again in a moment; if it lasts, see what loads the database (pg_stat_activity)"
		hints, slow = nil, errCheckSlow
	case answered:
		// A new connection got its answer at once: the call's own
		// connection was cut, or the call is too big for the bound.
		what = fmt.Sprintf("the database did not answer within %s (%s), so the call was given up and its connections closed, though a new connection is answered at once: "+
			"either the call's connection was cut (a failover, a frozen network path), or the call takes longer than that on this much data, which needs a narrower request or a longer timeout (%v)", b.limit, name, inner)
		again = "the next call connects afresh: try it again, narrowed if it is a big one"
	}
	if partial != nil {
		msg := what
		if slow != nil { // a lock or a busy pool: no step of a tool ends it
			msg += "; " + again
		}
		*partial = cause{msg: msg, err: errors.Join(ErrUnavailable, *partial), lockWait: slow != nil}
		return err
	}
	parts := []string{what}
	switch {
	case b.beforeWrite:
		parts = append(parts, nothingChanged)
	case e == writesOnce:
		parts = append(parts, "the call writes in one transaction, which was either done whole or not at all: check before calling again")
	case e == firstStep:
		parts = append(parts, "the step it was in, the call's first, one transaction, was either done whole or not at all: check before calling again")
	case e == writesInSteps:
		parts = append(parts, "the step it was in, one transaction, was either done whole or not at all, and the steps of this call done before it stay done: check what is left before calling again")
	}
	parts = append(parts, again)
	kind := ErrUnavailable
	if slow != nil {
		kind = errors.Join(ErrUnavailable, slow)
	}
	if !b.beforeWrite && e != reads {
		// Its write may have been done: explainWrite adds the reads that
		// show whether it was.
		kind = errors.Join(kind, errMayHaveWritten)
	}
	return &Error{Msg: strings.Join(parts, "; "), Err: errors.Join(kind, err), Hints: hints}
}

// errMayHaveWritten is joined to the error of a write given up by its
// bound after it may have written (unansweredError), whose message says
// to check before calling again: explainWrite gives it the reads that
// show what it changed as its next steps, after the health check when the
// database did not answer.
var errMayHaveWritten = errors.New("the write may have been done")

// lockWaited reports whether err, the error of a read made with ctx, is
// a wait for a lock that passed the read's lock bound (Options.ReadLockWait).
func lockWaited(ctx context.Context, err error) (*callBound, bool) {
	b, ok := ctx.Value(callBoundKey{}).(*callBound)
	if !ok || b.lockWait == 0 || !store.IsLockTimeout(err) {
		return nil, false
	}
	return b, true
}

// lockWaitError is err, a read given up once it waited b.lockWait for a
// lock another session holds, with the table, who holds it since when,
// and what to do: wait for that session, or end it. It is of kind
// unavailable, as a call given up at its bound while it waited for a lock
// is, with no health check among its next steps, which would say OK.
func (s *Service) lockWaitError(b *callBound, err error) error {
	ctx, cancel := context.WithTimeout(b.outer, lockProbeWait)
	defer cancel()
	heldBy, end, probeErr := s.store.ReadBlockers(ctx, b.lockWait)
	what := fmt.Sprintf("the read waited %s for a lock another session holds on a table it reads, and was given up rather than hold a connection the workers share", b.lockWait)
	again := "try it again once that session ends its transaction (pg_stat_activity says what it runs, pg_locks what it holds); if it is stuck, end it: " + end
	switch {
	case heldBy != "":
		what += ": " + heldBy
	case probeErr != nil:
		again = fmt.Sprintf("try it again in a moment; pg_locks and pg_stat_activity name the session that holds the lock and what it runs (asking them failed: %v)", probeErr)
	default:
		again = "try it again in a moment; pg_locks and pg_stat_activity name the session that holds the lock (on a row, or taken a moment ago) and what it runs"
	}
	msg := fmt.Sprintf("%s (%v); %s", what, err, again)
	if b.beforeWrite {
		msg = fmt.Sprintf("%s (%v); %s; %s", what, err, nothingChanged, again)
	}
	if partial, _ := partialCause(err); partial != nil {
		*partial = cause{msg: msg, err: errors.Join(ErrUnavailable, ErrLockWait, *partial), lockWait: true}
		return err
	}
	return &Error{Msg: msg, Err: errors.Join(ErrUnavailable, ErrLockWait, err)}
}

// againOnceFree gives *err, the error of a read given up while it waited
// for a lock another session holds (lockWaitError, or the call's bound
// passed in that wait) or for a connection of a pool other calls held,
// or that found a DLQ dropped under each of its reads of every DLQ
// (store.QueuesChangedError), the call itself again as its next step: op
// with the arguments kv, as hint takes them. Its text says to try it
// again (once that session ends or the pool frees), and the health check,
// which may read no table that session holds, would say OK. An error that carries steps of its own keeps them.
// A read defers it before explainDB, whose error it completes.
func againOnceFree(err *error, op string, kv ...any) {
	var e *Error
	changed := errors.As(*err, new(*store.QueuesChangedError))
	if *err == nil || !errors.Is(*err, ErrLockWait) && !errors.Is(*err, errPoolBusy) && !changed || !errors.As(*err, &e) || len(e.Hints) > 0 {
		return
	}
	why := "the same call again, once the session that holds the lock ends its transaction"
	switch {
	case changed:
		why = "the same call again, which reads the queues as they are then"
	case !errors.Is(*err, ErrLockWait):
		why = "the same call again, once fewer calls hold the pool's connections"
	}
	e.Hints = []Hint{hint(op, why, kv...)}
}

// poolBusy says that every one of the size connections of the process's
// pool is (verb "are") or was ("were") in use by other calls, and why
// they may be held.
func poolBusy(size int, verb, why string) string {
	return fmt.Sprintf("all %d connections of this process's pool %s in use by other calls, which every call waits for (%s)", size, verb, why)
}

// errPoolBusy is joined to the error of a call given up while every
// connection of the pool was in use by other calls and a new connection
// was answered at once: the database answers, and the calls holding the
// pool are what to wait for.
var errPoolBusy = errors.New("waited for a connection of the pool")

// errCheckSlow is joined to the error of a health check given up at its
// own bound (HealthCheckTimeout) while a new connection was answered at
// once: the database answers, slowly.
var errCheckSlow = errors.New("the health check was slow")

// ErrLockWait is joined to the error of a call given up while it waited
// for a lock another session holds (with ErrUnavailable): the database
// answers, and that session is what to end. The error's next step may be
// the same call again, to make once that session ended, which a front end
// shows even where it leaves out the call that failed.
var ErrLockWait = errors.New("waited for another session's lock")

// lockHolders asks, on behalf of a call given up by its bound b, who
// holds locks on pgbus's and PGMQ's tables, within the bound and at most
// lockProbeWait, and reports whether the database answered: one that
// does not leaves heldBy "".
func (s *Service) lockHolders(b *callBound) (heldBy, terminate string, answered bool) {
	ctx, cancel := context.WithTimeout(b.outer, min(b.limit, lockProbeWait))
	defer cancel()
	heldBy, terminate, err := s.store.LockHolders(ctx, b.limit) // the call, or its statement, waited its bound
	if err != nil {
		return "", "", false
	}
	return heldBy, terminate, true
}

// lockProbeWait bounds the question lockHolders asks: on a frozen path it
// gets no answer, and the call's caller, who already waited a bound,
// waits this much more for the error.
const lockProbeWait = 5 * time.Second

// SlowRead says why a read of the database got no answer in time, for a
// probe or a scrape that must not call a database that answers
// unreachable: answered reports whether the database answers a question
// asked now (within 5 seconds, or ctx's deadline if sooner), and heldBy,
// when it does, names the
// sessions holding locks on pgbus's and PGMQ's tables that keep reads or
// writes waiting ("" for none: the database is slow, not held), with the
// statement that ends each.
func (s *Service) SlowRead(ctx context.Context) (heldBy string, answered bool) {
	if s == nil || s.store == nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, lockProbeWait)
	defer cancel()
	heldBy, terminate, err := s.store.LockHolders(ctx, 0)
	if err != nil {
		return "", false
	}
	if heldBy != "" && terminate != "" {
		heldBy += "; to end it: " + terminate
	}
	return heldBy, true
}

// PoolBusy says, for a probe or a scrape whose read got no answer in
// time, that every connection of the process's pool is in use by other
// calls, which its read waited for whatever it asked (calls waiting for a
// lock another session holds keep theirs until it goes or their call
// timeout passes); "" when one is free.
func (s *Service) PoolBusy() string {
	if s == nil || s.store == nil {
		return ""
	}
	busy, size := s.store.PoolExhausted()
	if !busy {
		return ""
	}
	return poolBusy(size, "are", "calls that wait for a lock another session holds keep theirs until it goes or their call timeout passes")
}

// HasConnected reports whether the database ever took the login of the
// service's store (store.Store.HasConnected): a login it refuses after one
// it took is a password rotated under the process, not a wrong one.
func (s *Service) HasConnected() bool {
	return s != nil && s.store != nil && s.store.HasConnected()
}
