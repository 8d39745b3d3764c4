package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgbus/pgbus/store"
)

// Kinds of error: stable words for what went wrong, which front ends give
// scripts and agents beside an error's sentence, so that nobody has to
// read the sentence to act on it.
const (
	// KindInvalid: the request was refused by its checks (ErrInvalid);
	// nothing was changed.
	KindInvalid = "invalid"
	// KindNotFound: a queue, message or breaker does not exist
	// (ErrNotFound).
	KindNotFound = "not_found"
	// KindReadOnly: a write refused by a read-only service (ErrReadOnly).
	KindReadOnly = "read_only"
	// KindChanged: a guarded call refused because what it would move
	// changed since its dry run (ErrChanged); nothing was changed.
	KindChanged = "changed"
	// KindNotAsked: an answer refused as not the answer to the question
	// asked (ErrNotAsked).
	KindNotAsked = "not_asked"
	// KindUnavailable: the database did not answer, or took no
	// connections (ErrUnavailable); the same call may succeed once it does.
	// So may a call that another session's lock held up, or a read of
	// every DLQ that queues created or dropped meanwhile cut short at each
	// of its reads (store.QueuesChangedError), which are of this kind too.
	KindUnavailable = "unavailable"
	// KindStopped: the call was cancelled or ran out of time before it
	// finished; what it did before stays done.
	KindStopped = "stopped"
	// KindSchema: the database has no pgbus schema or an older one than
	// this pgbus needs (migrate), or a newer one (upgrade pgbus).
	KindSchema = "schema"
	// KindPermission: the database refused the role a privilege the call
	// needs; the error names the grants.
	KindPermission = "permission"
	// KindUsage is for front ends, never returned by ErrorKind: their own
	// input could not be read as a request (an unknown flag or argument, a
	// value of the wrong type).
	KindUsage = "usage"
	// KindFailed: any other error.
	KindFailed = "failed"
)

// Kinds returns every Kind word, KindUsage included: all that a front end
// may give as an error's kind, for its tests and its documentation.
func Kinds() []string {
	return []string{KindUsage, KindInvalid, KindReadOnly, KindNotFound, KindChanged, KindNotAsked,
		KindUnavailable, KindStopped, KindSchema, KindPermission, KindFailed}
}

// ErrorKind returns the kind of err, one of the Kind words but KindUsage:
// the class it wraps, whichever operation or layer it came from; for a
// nil err, no error, it returns "". A cancellation comes first, as it is
// the caller's doing whatever the call was in, and so is the caller's
// deadline passing before the call finished (KindStopped, even where the
// driver made of it a connection that timed out); a connection that could
// not be made in time within its own bound (the connect timeout) is a
// database that does not answer (KindUnavailable).
func ErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInvalid):
		return KindInvalid
	case errors.Is(err, ErrReadOnly):
		return KindReadOnly
	case errors.Is(err, ErrNotFound):
		return KindNotFound
	case errors.Is(err, ErrChanged):
		return KindChanged
	case errors.Is(err, ErrNotAsked):
		return KindNotAsked
	case errors.Is(err, store.ErrSchemaMissing), errors.Is(err, store.ErrSchemaOld), errors.Is(err, store.ErrSchemaNewer):
		return KindSchema
	case errors.Is(err, store.ErrPermission):
		return KindPermission
	case errors.Is(err, context.Canceled), errors.As(err, new(callerStopped)):
		return KindStopped
	case errors.Is(err, ErrUnavailable), store.IsCrowded(err):
		return KindUnavailable
	case errors.Is(err, context.DeadlineExceeded) && !store.NeverSent(err):
		// The store takes a bare context deadline for a lost connection (it
		// is a net.Error): a Go caller's own deadline, passed while the pool
		// waited for a connection, that engine.Client.Send returns as it is.
		return KindStopped
	case store.IsUnreachable(err):
		return KindUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return KindStopped
	}
	return KindFailed
}

// callerStopped is the error of a call whose caller's deadline passed
// before it finished: the driver may have made of it a connection that
// timed out, but it is the caller's stop, not a database that does not
// answer.
type callerStopped struct{ err error }

func (e callerStopped) Error() string {
	return fmt.Sprintf("stopped: the deadline of the caller's context passed before the call finished (%v)", e.err)
}
func (e callerStopped) Unwrap() []error { return []error{context.DeadlineExceeded, e.err} }

// callerCancelledError is the error of a call its caller cancelled before
// it finished (a client gone, an interrupt): its audit entry and its
// log say so, not the driver's bare "context canceled".
type callerCancelledError struct{ err error }

func (e callerCancelledError) Error() string {
	return fmt.Sprintf("stopped: the caller cancelled the call before it finished (its client went away, or it was interrupted): %v", e.err)
}
func (e callerCancelledError) Unwrap() error { return e.err }
