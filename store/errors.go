package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrInvalid is wrapped by every error caused by bad input: a queue name that
// breaks the rules, a payload that is not JSON, a delay out of range. Such an
// error means nothing was written.
var ErrInvalid = errors.New("invalid input")

// ErrUnavailable is wrapped by the error of a statement, or of opening a
// Store, that found the database unavailable: it did not answer (down,
// restarting, not taking connections yet, the network to it cut, the
// connection broken during the call: IsUnreachable) or took no more
// connections (IsCrowded). The same call may succeed once it is back. The
// deadline of the caller's context passing while a statement ran is not
// it: that error wraps context.DeadlineExceeded.
var ErrUnavailable = errors.New("the database is unavailable")

// ErrNotFound is wrapped by errors about a queue or message that does not exist.
var ErrNotFound = errors.New("not found")

// ErrCommitUnknown is wrapped by the error of a write whose commit was
// sent but not answered (its connection broke, or its call was cancelled
// or timed out as the answer was on its way): it may or may not have been
// made, so what it wrote is to be looked for before writing it again.
var ErrCommitUnknown = errors.New("the commit was sent but not answered, so it may or may not have been made")

// ErrClosed marks a statement refused because its Store was closed
// (Store.Close) or its pool was.
var ErrClosed = errors.New("store closed")

type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func invalidf(format string, args ...any) error {
	return &kindError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

// errCursor marks the refusals of a page's cursor (IsCursorError).
var errCursor = errors.New("cursor refused")

// cursorf is the refusal (ErrInvalid) of a page's cursor, in words that
// start with the cursor's name, as a field, and name it again in what to
// do ("start again without cursor").
func cursorf(format string, args ...any) error {
	return &kindError{kind: errors.Join(ErrInvalid, errCursor), msg: fmt.Sprintf(format, args...)}
}

// IsCursorError reports whether err is the refusal of a page's cursor,
// whose words start with the cursor's name and name it again in what to
// do: a caller can name it as its own front end names the field.
func IsCursorError(err error) bool { return errors.Is(err, errCursor) }

func notFoundf(format string, args ...any) error {
	return &kindError{kind: ErrNotFound, msg: fmt.Sprintf(format, args...)}
}

// ArchiveMissingError is the error of a call that archives into Queue, a
// physical queue, while its archive table is gone (dropped or renamed
// outside pgbus) and the queue is there. It wraps ErrNotFound. Creating
// the queue again makes the table; the operations layer gives that as a
// next step, which each front end words.
type ArchiveMissingError struct {
	Queue string
}

func (e *ArchiveMissingError) Error() string {
	return fmt.Sprintf("queue %q has no archive table (pgmq.a_%s was dropped or renamed outside pgbus): creating the queue again makes it, and what waits to be archived is archived then", e.Queue, e.Queue)
}

func (e *ArchiveMissingError) Unwrap() error { return ErrNotFound }

// ErrChanged is wrapped by the refusal of a guarded call (one given the
// set of messages it must move) whose messages changed since that set was
// seen. Such an error means nothing was written.
var ErrChanged = errors.New("changed")

// changedError is a refusal wrapping ErrChanged: its whole text, which
// says what was not done and what to do in the words of a call's
// arguments, and the part of it that says what changed.
type changedError struct{ cause, msg string }

func (e *changedError) Error() string { return e.msg }
func (e *changedError) Unwrap() error { return ErrChanged }

// otherMoveExpect is the refusal of a guarded move given the expect of a
// dry run of the other move: a retry's to a discard, or a discard's to a
// retry.
type otherMoveExpect struct{ error }

func (e otherMoveExpect) Unwrap() error { return e.error }

// IsOtherMoveExpect reports whether err refuses a guarded move given the
// expect of a dry run of the other move (a retry's for a discard, or a
// discard's for a retry), which this call's own dry run replaces.
func IsOtherMoveExpect(err error) bool { return errors.As(err, new(otherMoveExpect)) }

// changed is the refusal whose text is cause, then "; " and then.
func changed(cause, then string) error {
	return &changedError{cause: cause, msg: cause + "; " + then}
}

// ChangedCause returns what changed, as the refusal err (wrapping
// ErrChanged) says it, without what follows it: for a front end that words
// what to do itself. "" when err is no such refusal.
func ChangedCause(err error) string {
	var c *changedError
	if errors.As(err, &c) {
		return c.cause
	}
	return ""
}

// IsLockTableFull reports whether err is PostgreSQL refusing a lock for
// want of room in its lock table (SQLSTATE 53200, out of shared memory,
// raised by the lock manager, lock.c): every lock a transaction holds, of
// each table and index it read, takes room in a table shared by every
// session, sized by max_locks_per_transaction. It is told by the code
// and the server's source file, which the error carries untranslated,
// not by the error's words, which lc_messages translates.
func IsLockTableFull(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "53200" && pgErr.File == "lock.c"
}

// SQLState returns the SQLSTATE and the hint of the PostgreSQL error err
// is or wraps, whether a statement's or a refused connection's, or "" for
// both when it wraps none. The operations layer explains errors by them
// without knowing the driver.
func SQLState(err error) (code, hint string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.Hint
	}
	return "", ""
}
