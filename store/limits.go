package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Limit is a limit a database administrator set for the role or database
// pgbus uses (ALTER ROLE ... SET, ALTER DATABASE ... SET) that refused a
// statement: the layers above say what it is and what to do about it.
type Limit int

const (
	// NoLimit: the error is not one of a setting's refusals.
	NoLimit Limit = iota
	// LimitReadOnly: the transaction was read-only (SQLSTATE 25006), as
	// every one is on a standby or with default_transaction_read_only on.
	LimitReadOnly
	// LimitStatementTimeout: the server cancelled the statement (57014):
	// statement_timeout passed, or someone cancelled it
	// (pg_cancel_backend). A context pgx cancelled is not one.
	LimitStatementTimeout
	// LimitLockTimeout: a lock wait passed lock_timeout (55P03).
	LimitLockTimeout
	// LimitConflict: the transaction was rolled back for conflicting with
	// another one (40001 serialization_failure, as REPEATABLE READ and
	// SERIALIZABLE, the default_transaction_isolation a role may set,
	// raise; 40P01 deadlock_detected). Nothing of it was written, so it
	// may be run again.
	LimitConflict
	// LimitIdleTimeout: the server ended the session for sitting idle
	// (57P05 idle_session_timeout).
	LimitIdleTimeout
	// LimitIdleInTransaction: the server ended the session for sitting
	// idle inside a transaction (25P03 idle_in_transaction_session_timeout),
	// as pgbus's transactions do between their statements for a moment.
	LimitIdleInTransaction
	// LimitCancelled: someone cancelled the statement (57014 "due to user
	// request": pg_cancel_backend, or another client's cancel request):
	// no setting to raise. Told apart from a statement_timeout by
	// PostgreSQL's English message; in another lc_messages it reads as
	// LimitStatementTimeout, whose words name the cancel too.
	LimitCancelled
)

// LimitOf returns the limit that refused err's statement, or NoLimit. A
// migration that gave up waiting for a lock (MigrationLockError) waited by
// a lock_timeout of its own, which no setting of the role changes: NoLimit.
func LimitOf(err error) Limit {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || errors.As(err, new(*MigrationLockError)) {
		// A migration's lock waits are bounded by its own lock_timeout.
		return NoLimit
	}
	switch pgErr.Code {
	case "25006": // read_only_sql_transaction
		return LimitReadOnly
	case "57014": // query_canceled
		if pgconn.Timeout(err) {
			return NoLimit // pgx cancelled it for a context that ended
		}
		if strings.Contains(pgErr.Message, "user request") {
			return LimitCancelled
		}
		return LimitStatementTimeout
	case "55P03": // lock_not_available
		return LimitLockTimeout
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return LimitConflict
	case "57P05": // idle_session_timeout
		return LimitIdleTimeout
	case "25P03": // idle_in_transaction_session_timeout
		return LimitIdleInTransaction
	}
	return NoLimit
}

// conflictTries is how many times a statement run on its own (not in a
// transaction of several) is run when it conflicts with another
// transaction: under REPEATABLE READ or SERIALIZABLE, which a role or
// database may set by default, concurrent workers conflict often, and
// one more run nearly always goes through.
const conflictTries = 10

// conflicted reports whether err, the failure of the try-th run of a
// statement run on its own, is a conflict with another transaction worth
// running it again for, after a short pause of random length so that
// the two do not meet again. Such a statement was rolled back whole, so
// running it again runs it once.
func conflicted(ctx context.Context, err error, try int) bool {
	if try >= conflictTries || ctx.Err() != nil || LimitOf(err) != LimitConflict || ctx.Value(noConflictRetries{}) != nil {
		return false
	}
	pause := time.Duration(try) * (5*time.Millisecond + rand.N(10*time.Millisecond))
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// noConflictRetries is the key of a context whose statements are not run
// again on a conflict: a test that counts the conflicts of the statements
// themselves would otherwise see only those that outlast every retry.
type noConflictRetries struct{}

// settled runs fn, a statement run on its own whose rows its caller
// collects, again while it conflicts with another transaction. Such a
// statement's rows may all have come before its commit failed (under
// SERIALIZABLE a conflict is often found at the commit), so the rows of a
// run that failed are dropped with it.
func settled[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	v, err := fn()
	for try := 1; conflicted(ctx, err, try); try++ {
		v, err = fn()
	}
	return v, err
}
