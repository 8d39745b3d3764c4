package engine

import (
	"fmt"

	"github.com/pgbus/pgbus/store"
)

// limitAdvice says what to do about err when a limit the DBA set for the
// role or database pgbus uses (store.LimitOf) caused it, naming role, the
// role pgbus connects as; "" for other errors.
func limitAdvice(err error, role string) string {
	alter := "ALTER ROLE " + store.RoleSQL(role) + " SET "
	switch store.LimitOf(err) {
	case store.LimitReadOnly:
		return "the database takes no writes here (a standby, or default_transaction_read_only on for the role or database), so no job's outcome can be written: " +
			"point pgbus at the primary server, or have the DBA turn the default off (" + alter + "default_transaction_read_only = off)"
	case store.LimitStatementTimeout:
		return "the database cancelled the statement as it ran past statement_timeout, set for the role or database; the workers go on and try again: " +
			"if it keeps happening, raise it for the role pgbus uses (" + alter + "statement_timeout = '5min')"
	case store.LimitCancelled:
		return "someone cancelled the statement (pg_cancel_backend, or a cancel request of another client); the workers go on and try again: " +
			"if it keeps happening, ask the DBA what cancels pgbus's statements"
	case store.LimitLockTimeout:
		return "a statement waited for a lock another transaction held longer than lock_timeout, set for the role or database; the workers go on and try again: " +
			"if it keeps happening, end that transaction, or raise lock_timeout for the role pgbus uses (" + alter + "lock_timeout = '10s')"
	case store.LimitConflict:
		return "the transaction conflicted with another one (a serialization failure or a deadlock) each time it was run; the workers go on and try again: " +
			"if it keeps happening, check the default_transaction_isolation of the role or database, as pgbus needs no more than READ COMMITTED"
	case store.LimitIdleTimeout:
		return "the database ended the connection for sitting idle past idle_session_timeout, set for the role or database; the workers go on with another: " +
			"if it keeps happening, turn it off for the role pgbus uses (" + alter + "idle_session_timeout = 0)"
	case store.LimitIdleInTransaction:
		return "the database ended the connection for sitting idle inside a transaction past idle_in_transaction_session_timeout, set for the role or database (a busy pgbus process may pause that long between a transaction's statements); the workers go on with another: " +
			"if it keeps happening, raise it for the role pgbus uses (" + alter + "idle_in_transaction_session_timeout = '1min')"
	}
	return ""
}

// advised is msg, a log line about err, with what to do when a limit the
// role or database sets caused err.
func (c *Client) advised(msg string, err error) string {
	if a := limitAdvice(err, c.store.User()); a != "" {
		return msg + ": " + a
	}
	return msg
}

// limitErr is err, which stopped Run from starting, with what to do when
// a limit the role or database sets caused it.
func (c *Client) limitErr(err error) error {
	if a := limitAdvice(err, c.store.User()); a != "" {
		return fmt.Errorf("%w: %s", err, a)
	}
	return err
}
