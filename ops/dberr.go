package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/store"
)

// effect is what an operation may have written by the time it failed,
// which the advice of a database error states.
type effect int

const (
	// reads: the operation writes nothing but its audit entry.
	reads effect = iota
	// writesOnce: the operation writes in one transaction, all or nothing.
	writesOnce
	// writesInSteps: the operation writes in several transactions (a batch,
	// a DLQ or a message at a time, or a queue and then its settings).
	writesInSteps
	// firstStep is writesInSteps for a call that failed before any of its
	// steps was done (stepDone): what it changed is said as of a call in
	// one transaction, with no steps done before to check. explainDB makes
	// it; no operation is given it.
	firstStep
)

// stepsKey is the context key of the record of a call in steps whose
// steps were done (withSteps).
type stepsKey struct{}

// withSteps returns ctx with a record of whether a step of its call, an
// operation in steps, was done (committed): enter gives one to every
// call of effect writesInSteps.
func withSteps(ctx context.Context) context.Context {
	return context.WithValue(ctx, stepsKey{}, new(atomic.Bool))
}

// stepDone records that a step of the call of ctx was done: a failure
// after it leaves that step done, which its error says to check.
func stepDone(ctx context.Context) {
	if done, ok := ctx.Value(stepsKey{}).(*atomic.Bool); ok {
		done.Store(true)
	}
}

// of is e for the call of ctx: writesInSteps for a call none of whose
// steps was done (stepDone) is firstStep.
func (e effect) of(ctx context.Context) effect {
	if done, ok := ctx.Value(stepsKey{}).(*atomic.Bool); e == writesInSteps && ok && !done.Load() {
		return firstStep
	}
	return e
}

// once reports whether a failure of a call of effect e left nothing done
// before it: the call writes in one transaction, or failed at its first.
func (e effect) once() bool { return e == writesOnce || e == firstStep }

// writesUnlessDry is the effect of a move that a dry run only counts.
func writesUnlessDry(dryRun bool) effect {
	if dryRun {
		return reads
	}
	return writesInSteps
}

// bulkEffect is the effect of a retry or discard: one guarded by its dry
// run's expect moves its whole set in one transaction, or nothing, so a
// failure has no steps done before it to leave behind.
func bulkEffect(dryRun bool, expect string) effect {
	if !dryRun && expect != "" {
		return writesOnce
	}
	return writesUnlessDry(dryRun)
}

// schemaStates are the SQLSTATEs of a statement naming what a pgbus schema
// lacks: undefined_table, undefined_column, invalid_schema_name,
// undefined_function. On a current schema they mean something else (a
// queue dropped meanwhile), so they are only a reason to check the schema.
var schemaStates = map[string]bool{"42P01": true, "42703": true, "3F000": true, "42883": true}

// explainDB replaces *err, the error of an operation, with one that says
// what to do when the database could not serve the call: its pgbus schema
// is missing or older than this pgbus (checked only when a statement failed
// on something undefined or found no queue), it lacks a resource, it takes no connections
// now, or it did not answer within the call's bound (see bound). Other errors, and those that already are *Error, stay. Operations
// defer it after their audit entry's, so that the entry records the advice.
func (s *Service) explainDB(ctx context.Context, err *error, e effect) {
	e = e.of(ctx)
	var done *Error
	if *err == nil || isViewWait(*err) {
		return
	}
	if s.dlqGiven(ctx, *err) {
		return
	}
	if s.archiveMissing(ctx, err) {
		return
	}
	if held, ok := errors.AsType[*store.TablesHeldError](*err); ok {
		*err = tablesHeldError(held)
		return
	}
	if changed, ok := errors.AsType[*store.QueuesChangedError](*err); ok {
		*err = queuesChangedError(*err, changed, e)
		return
	}
	if explainedUnavailable(*err) {
		// A call made inside this one (the reads before a write) said
		// already why the database could not serve it.
		return
	}
	if b, ok := givenUp(ctx, *err); ok {
		*err = s.unansweredError(b, *err, e)
		return
	}
	if b, ok := lockWaited(ctx, *err); ok {
		*err = s.lockWaitError(b, *err)
		return
	}
	// A bare deadline is stopped already, but the store takes it for a lost
	// connection, which unreachableError would say it is.
	if k := ErrorKind(*err); (k == KindUnavailable || k == KindFailed || k == KindStopped && store.IsUnreachable(*err)) && callerDeadlinePassed(ctx) && !carriesSteps(*err) {
		*err = callerStopped{err: *err}
		return
	}
	if errors.Is(*err, context.Canceled) && callerCancelled(ctx) && !carriesSteps(*err) {
		*err = callerCancelledError{err: *err}
		return
	}
	if errors.As(*err, &done) {
		// A queue or DLQ not found may be the whole schema missing: pgmq's
		// catalog is read first, and on a database never migrated it lacks
		// every queue. Checked only then, so a found one costs nothing.
		// The not-found is left out of the new error: what is missing is
		// the schema, not the queue the caller named.
		if errors.Is(*err, store.ErrNotFound) {
			if missing := s.schemaError(ctx, nil); missing != nil {
				*err = missing
			}
		}
		return
	}
	if code, _ := store.SQLState(*err); schemaStates[code] {
		*err = s.schemaError(ctx, *err)
		return
	}
	if code, _ := store.SQLState(*err); code == "22P05" || code == "22021" {
		*err = encodingError(*err, e)
		return
	}
	if lim := store.LimitOf(*err); lim != store.NoLimit && ctx.Err() == nil {
		if lim == store.LimitReadOnly {
			// Connections made while the setting was on keep it.
			s.store.RenewReadOnlyConnections()
			if s.onStandby(ctx) {
				*err = standbyError(*err)
				return
			}
		}
		*err = limitError(*err, lim, e, s.store.User(), fewerOf(ctx))
		return
	}
	if store.IsPermissionDenied(*err) {
		*err = permissionError(*err, e, s.store.User())
		return
	}
	*err = unexplained(resourceErrorFor(*err, e, s.store.User(), fewerOf(ctx)))
}

// explainedUnavailable reports whether err already says why the database
// could not serve the call: an *Error of kind unavailable, which an
// explanation made. Explained again, it would be said twice, the one
// inside the other.
func explainedUnavailable(err error) bool {
	var e *Error
	return errors.As(err, &e) && errors.Is(e.Err, ErrUnavailable)
}

// archiveMissing gives *err, when it is a queue's archive table missing
// (store.ArchiveMissingError), the step that makes it again, the queue's
// creation with the priority levels it has, and reports whether it was
// one. A bulk call that stopped partway keeps its own steps.
func (s *Service) archiveMissing(ctx context.Context, err *error) bool {
	var missing *store.ArchiveMissingError
	if !errors.As(*err, &missing) {
		return false
	}
	if partial, _ := partialCause(*err); partial != nil {
		return true
	}
	create := s.createAgainHint(ctx, baseQueue(missing.Queue), "creates the queue's archive table again; what waits to be archived is archived then")
	var e *Error
	if errors.As(*err, &e) {
		if !hasOp(e.Hints, OpQueueCreate) {
			e.with(create)
		}
		return true
	}
	if !carriesSteps(*err) {
		*err = &Error{Msg: (*err).Error(), Err: *err, Hints: []Hint{create}}
	}
	return true
}

func hasOp(hints []Hint, op string) bool {
	return slices.ContainsFunc(hints, func(h Hint) bool { return h.Op == op })
}

// encodingError is err, a text given (a payload, headers, a replacement)
// holding a character the database's encoding has no room for
// (untranslatable_character, character_not_in_repertoire): bad input,
// which the same call refuses again, not a trouble of the database. A
// bulk call keeps its own error, which says what it did.
func encodingError(err error, e effect) error {
	msg := fmt.Sprintf("the database's encoding cannot hold a character of what was given (%v)", err)
	if partial, _ := partialCause(err); partial != nil {
		*partial = cause{msg: msg, err: errors.Join(ErrInvalid, *partial)}
		return err
	}
	parts := []string{msg}
	if changed := e.changed(false); changed != "" {
		parts = append(parts, changed)
	}
	parts = append(parts, "give only characters that encoding holds (a database made with ENCODING 'UTF8' holds every one)")
	return &Error{Msg: strings.Join(parts, "; "), Err: errors.Join(ErrInvalid, err)}
}

// onStandby reports whether the server is known to be a standby.
func (s *Service) onStandby(ctx context.Context) bool {
	r, err := s.store.ReplicaState(ctx)
	return err == nil && r.Standby
}

// standbyError is err, a write refused by a standby (a read replica),
// which takes none: no write of the call was made there, and no setting
// changes that, so it is refused as a read-only server's write is
// (ErrReadOnly), saying where writes go. A bulk call keeps its own error,
// which says what it did: only its cause is said so.
func standbyError(err error) error {
	msg := fmt.Sprintf("this server is a standby (a read replica), which takes no writes (%v): nothing was changed; point pgbus at the primary server (its database URL) to make the call there; reads work here as they are", err)
	if partial, _ := partialCause(err); partial != nil {
		*partial = cause{msg: msg, err: errors.Join(ErrReadOnly, *partial)}
		return err
	}
	return &Error{Msg: msg, Err: errors.Join(ErrReadOnly, err)}
}

// permissionError is err, a statement the role pgbus connects as may not
// run (SQLSTATE 42501), which no retry cures: it says what the call
// changed and the grants that let the role do it, a reader's for a read
// and an operator's for a write. A bulk call that stopped partway keeps
// its own error, which says what it did: only its cause is said so.
func permissionError(err error, e effect, role string) error {
	what, todo := permissionAdvice(err, e, role)
	if partial, _ := partialCause(err); partial != nil {
		*partial = cause{msg: fmt.Sprintf("%s; %s", what, todo), err: errors.Join(store.ErrPermission, *partial)}
		return err
	}
	parts := []string{what}
	if changed := e.changed(false); changed != "" {
		parts = append(parts, changed)
	}
	return &Error{Msg: strings.Join(append(parts, todo), "; "), Err: errors.Join(store.ErrPermission, err)}
}

// permissionAdvice says what err, a statement refused for a privilege
// the role lacks, means, and what to do about it: the grants of a reader
// for a call that reads (e), an operator's for one that writes.
func permissionAdvice(err error, e effect, role string) (what, todo string) {
	role = cmp.Or(role, "<role>")
	what = fmt.Sprintf("the database role %s lacks a privilege this call needs (%v)", role, err)
	if e == reads {
		return what, "trying again will not help: to let it read, run as the role that owns the pgbus schemas: " + store.ReadGrants(role)
	}
	return what, "trying again will not help: to let it write (retry, discard, pause, send), run as the role that owns the pgbus schemas: " + store.OperatorGrants(role) +
		"; or make this call as a role that has them, and leave this one to reads"
}

// unexplained is err, when nothing above could say what went wrong (an
// error of kind failed), with the health check as its next step: whether
// the database answers, and what else it reports, is what to look at
// first. Other errors pass unchanged.
func unexplained(err error) error {
	if err == nil || ErrorKind(err) != KindFailed || carriesSteps(err) {
		return err
	}
	return steps{err: err, hints: []Hint{hint(OpHealth, "says whether the database answers, and what else stands in the way")}}
}

// schemaError is err, a statement's failure on something undefined, as
// the schema check explains it when the schema is missing or old; err
// unchanged when the schema is current (a queue dropped meanwhile keeps its
// own error) or the check could not tell. err may be nil: the schema's
// error alone is returned then, or nil.
func (s *Service) schemaError(ctx context.Context, err error) error {
	_, checked := s.store.CheckSchema(ctx)
	if !errors.Is(checked, store.ErrSchemaMissing) && !errors.Is(checked, store.ErrSchemaOld) {
		return err
	}
	e := &Error{Msg: checked.Error() + " (Store.Migrate from Go)", Err: errors.Join(checked, err)}
	switch {
	case errors.Is(checked, store.ErrStandby): // a standby's migration is the primary's
	case errors.Is(checked, store.ErrPGMQMissing):
		e.Hints = []Hint{installPGMQHint()}
	default:
		e.Hints = []Hint{hint(OpMigrate, "applies the schema migrations this pgbus needs")}
	}
	return e
}

// installPGMQHint is the step after PGMQ's tables went missing under a
// pgbus schema, which no migration makes again: a migration that installs
// PGMQ from its SQL script first, the script's path still to be given.
// It makes an empty PGMQ, so it comes after a restore of schema pgmq from
// a backup, which the error names first.
func installPGMQHint() Hint {
	return hint(OpMigrate, "installs an empty PGMQ from its SQL script (PGMQ's pgmq.sql) when schema pgmq cannot be restored from a backup", MigrateInstallPGMQ, "PGMQ_SQL")
}

// resourceError is err, refused by the database for want of a resource
// (SQLSTATE class 53) or because it takes no connections now (57P03),
// with what that means for the call and what to do; other errors pass
// unchanged. The database's own words, and its hint, stay in the message;
// a bulk call stopped partway keeps its error, its cause said so.
func resourceError(err error, e effect) error {
	return resourceErrorFor(err, e, "", callFewer)
}

// resourceErrorFor is resourceError naming role, the role pgbus connects
// as, in the statements its advice gives, and fewer, how the call handles
// fewer messages (fewerOf), where that may help.
func resourceErrorFor(err error, e effect, role, fewer string) error {
	code, dbHint := store.SQLState(err)
	a := resourceAdvice(code, err, role, fewer)
	if a.what == "" {
		return unreachableError(err, e)
	}
	if partial, again := partialCause(err); partial != nil {
		// A bulk call stopped partway keeps its own error, which says what
		// it did and how to do the rest: only its cause is said so,
		// marked unavailable for a database that takes no connections
		// (shutting down), whose next step is then the health check.
		// Wrapped instead, its next steps lost the health check.
		c := cause{msg: fmt.Sprintf("%s (%v)", a.what, *partial), err: *partial}
		if again {
			c.msg += "; " + a.todo
		}
		if code == "57P03" {
			c.err = errors.Join(ErrUnavailable, *partial)
		}
		*partial = c
		return err
	}
	parts := []string{fmt.Sprintf("%s (%v)", a.what, err)}
	if dbHint != "" {
		parts = append(parts, "the database's hint: "+strings.TrimSuffix(dbHint, "."))
	}
	if changed := e.changed(a.atConnect); changed != "" {
		parts = append(parts, changed)
	}
	out := &Error{Msg: strings.Join(append(parts, a.todo), "; "), Err: err}
	if code == "57P03" {
		out.Err = errors.Join(ErrUnavailable, err)
	}
	if a.atConnect {
		// Refused before any statement, it passes as the database takes
		// connections again, which the health check says.
		out.Hints = []Hint{healthHint()}
	}
	return out
}

// unreachableError is err, a database that does not answer (down,
// restarting, the network to it cut, the connection broken in the
// call), with what that means for the call and what to do: wait for it
// and call again, pgbus_health or pgbus health saying when it answers.
// A bulk call that stopped partway keeps its own error, which says what
// it did and that the same call does the rest: only its cause is said
// so. Other errors pass unchanged.
func unreachableError(err error, e effect) error {
	if !store.IsUnreachable(err) {
		return err
	}
	if partial, _ := partialCause(err); partial != nil {
		// The store marks its own errors unavailable; only one this
		// layer explained says so in its words already.
		if !errors.Is(*partial, ErrUnavailable) || !errors.As(*partial, new(cause)) && !errors.As(*partial, new(*Error)) {
			*partial = cause{msg: unanswered(*partial), err: errors.Join(ErrUnavailable, *partial)}
		}
		return err
	}
	parts := []string{unanswered(err)}
	switch {
	case e == reads:
	case e.once() && store.NeverSent(err):
		parts = append(parts, "nothing was changed: the call reached no database to write to")
	case e.once():
		parts = append(parts, "the connection broke during the call, so its write may or may not have been done: check before calling again")
	case store.NeverSent(err):
		parts = append(parts, "the step it was in changed nothing, as it reached no database, but the steps of this call done before it stay done: check what is left before calling again")
	default:
		parts = append(parts, "the connection broke during a step, which may or may not have been done, and the steps of this call done before it stay done: check what is left before calling again")
	}
	again := "try the call again once the database answers"
	if store.OutOfFiles(err) {
		again = "try the call again once the process has file descriptors to spare"
	}
	if store.EndedByAdministrator(err) {
		again = "try the call again: it runs on a new session, at once if an administrator ended the last one, once the database answers again if it was shutting down"
	}
	parts = append(parts, again)
	return &Error{Msg: strings.Join(parts, "; "), Err: errors.Join(ErrUnavailable, err), Hints: []Hint{healthHint()}}
}

// healthHint is the step after a database that did not answer: the
// health check, which says when it answers again.
func healthHint() Hint {
	return hint(OpHealth, "says whether the database answers again")
}

// explainWrite is explainDB for an operation that writes (e): a call cut
// off before it finished (cancelled, or out of time) without saying how
// much it did gets the steps check, which show what its writes may have
// changed, since some may have been done.
func (s *Service) explainWrite(ctx context.Context, err *error, e effect, check ...Hint) {
	s.explainDB(ctx, err, e)
	check = slices.DeleteFunc(check, func(h Hint) bool { return h.Op == "" })
	if *err == nil || e == reads || len(check) == 0 {
		return
	}
	var given *Error
	if errors.Is(*err, errMayHaveWritten) && errors.As(*err, &given) && !slices.ContainsFunc(given.Hints, func(h Hint) bool { return h.Op == check[0].Op }) {
		// Given up by its bound, it may or may not have written: its
		// message says to check, and these show what to.
		given.Hints = append(given.Hints, check...)
		return
	}
	if ErrorKind(*err) != KindStopped || carriesSteps(*err) {
		return
	}
	*err = steps{err: *err, hints: check}
}

// What a write cut off may have changed, to check before calling again.

// idsNow is the message a retry or discard of one id may have moved,
// which its show says (still dead, or where it went); deadNow for more
// ids or none.
func idsNow(ids []int64, queue string) Hint {
	if len(ids) != 1 {
		return deadNow(queue)
	}
	return hint(OpDLQShow, "shows whether the message is still dead, or where the call moved it", "queue", baseQueue(queue), "msg_id", ids[0])
}

func deadNow(queue string) Hint {
	return hint(OpDLQList, "shows what is dead now, which the call may have moved", "queue", baseQueue(queue))
}

func queueNow(queue string) Hint {
	return hint(OpQueueStats, "shows what is in the queues now, which the call may have changed", "queue", baseQueue(queue))
}

// discardedNow is no step (the zero Hint) for a call on every DLQ: the
// list is of one.
func discardedNow(queue string) Hint {
	if queue = baseQueue(queue); queue == "" {
		return Hint{}
	}
	return hint(OpDLQDiscarded, "shows what is discarded now, which the call may have changed", "queue", queue)
}

// steps is an error with the next steps ops gives it, which says what its
// cause says: a front end words a cancellation, or a failure nothing
// explained, itself, and not as an *Error's message.
type steps struct {
	err   error
	hints []Hint
}

func (s steps) Error() string { return s.err.Error() }
func (s steps) Unwrap() error { return s.err }

// carriesSteps reports whether err already holds the next steps ops gives
// it, or words them itself: an *Error, a *PartlyDone, a *PartlySent, a
// steps.
func carriesSteps(err error) bool {
	return errors.As(err, new(*Error)) || errors.As(err, new(*PartlyDone)) || errors.As(err, new(*PartlySent)) || errors.As(err, new(steps))
}

// partialCause is where err, the error of a call that did part of its
// work (a *PartlyDone, a *PartlySent), keeps its cause, for the
// explanations to say it in their words; nil for any other error. again
// says whether the same call again does the rest (a *PartlyDone), so that
// the cause may say when to make it: a *PartlySent's rest is another call.
func partialCause(err error) (cause *error, again bool) {
	var pd *PartlyDone
	if errors.As(err, &pd) {
		return &pd.Err, true
	}
	var ps *PartlySent
	if errors.As(err, &ps) {
		return &ps.Err, false
	}
	return nil, false
}

// advice is what a refusal means for a call and what to do about it.
type advice struct {
	what, todo string
	// atConnect: the refusal comes as a connection is made, before any
	// statement of it.
	atConnect bool
}

// resourceAdvice is the advice for SQLSTATE code, the code of err; its
// what is "" when the code is no refusal for want of a resource. role and
// fewer are resourceErrorFor's.
func resourceAdvice(code string, err error, role, fewer string) advice {
	const again = "then try the call again"
	switch {
	case code == "53100": // disk_full
		return advice{what: "the database server is out of disk space", todo: "free disk space on it (or give it a larger volume), " + again}
	case code == "53200" && store.IsLockTableFull(err): // out_of_memory, of the lock table
		return advice{what: "the database server's lock table is full (out of shared memory): a transaction locks each table it reads and each of the table's indexes until it ends, and the lock table, shared by every session, holds max_locks_per_transaction locks a connection",
			todo: "raise max_locks_per_transaction on the server (ALTER SYSTEM SET max_locks_per_transaction = 256, which takes effect once the server restarts), or narrow the call to one queue, whose tables it then reads alone; " + again}
	case code == "53200": // out_of_memory
		return advice{what: "the database server ran out of memory", todo: "try the call again once it has recovered; if it keeps happening, give the server more memory, or lower its work_mem or the pool sizes of the processes that use it; " +
			"if the database's words say it is out of shared memory, its lock table is full: raise max_locks_per_transaction on the server (a restart makes it take effect), or narrow the call to one queue"}
	case code == "53300": // too_many_connections
		return advice{what: "the database refused a connection: it has as many as it allows", atConnect: true,
			todo: "lower the pool size of the processes that use it (pool_max_conns in the database URL, e.g. ?pool_max_conns=4), put PgBouncer in front of it, or raise the limit it names (max_connections, or a role's or database's CONNECTION LIMIT); " + again}
	case code == "53400" && strings.Contains(err.Error(), "temp_file_limit"): // configuration_limit_exceeded
		alter := "ALTER ROLE " + store.RoleSQL(role) + " SET "
		return advice{what: "the database refused a statement of the call more temporary file space than temp_file_limit allows (what it sorts or groups past work_mem spills to temporary files)",
			todo: "raise temp_file_limit for the role pgbus uses (" + alter + "temp_file_limit = '1GB', which a superuser runs; -1 is no limit), or its work_mem so that less spills (" + alter + "work_mem = '16MB')" + orFewer(fewer) + "; " + again}
	case code == "53400": // configuration_limit_exceeded
		return advice{what: "the database hit a limit of its configuration", todo: "raise the setting it names" + orFewer(fewer) + "; " + again}
	case strings.HasPrefix(code, "53"): // insufficient_resources
		return advice{what: "the database server lacks a resource it needs", todo: "try the call again once it has recovered"}
	case code == "57P03": // cannot_connect_now
		return advice{what: "the database takes no connections now (it is starting up, shutting down or recovering)", atConnect: true, todo: "try the call again once it is up"}
	}
	return advice{}
}

// changed says what a failed call of this effect changed: nothing, since
// pgbus writes in transactions and PostgreSQL rolls back the one that
// fails, and a refused connection wrote nothing at all; only earlier
// transactions of a call in steps stand. "" for reads.
func (e effect) changed(atConnect bool) string {
	switch {
	case e.once() && atConnect:
		return "nothing was changed: the call got no connection to write with"
	case e.once():
		return "nothing was changed: pgbus writes in a transaction, and the failed one was rolled back"
	case e == writesInSteps:
		return "the step that failed changed nothing (pgbus writes in transactions, and the failed one was rolled back or never began), but the steps of this call done before it stay done: check what is left before calling again"
	}
	return ""
}

// unanswered says that the database does not answer, that it ended the
// call's session (store.EndedByAdministrator), or that this process had
// no file descriptor left to ask it with (store.OutOfFiles), with err,
// its failure, in parentheses.
func unanswered(err error) string {
	if store.OutOfFiles(err) {
		return fmt.Sprintf("%s (%v)", store.OutOfFilesAdvice, err)
	}
	if store.EndedByAdministrator(err) {
		return fmt.Sprintf("the database ended the call's session, as an administrator does (pg_terminate_backend) or the server does when it shuts down (%v)", err)
	}
	return fmt.Sprintf("the database does not answer: it is down or restarting, or the network to it is cut (%v)", err)
}

// cause is the reason a bulk call stopped, said in words of its own: not an
// *Error, whose message front ends would show instead of the counts of
// what the call did.
type cause struct {
	msg string
	err error
	// lockWait: the call waited for another session's lock, or met
	// queues dropped under each of its reads (store.QueuesChangedError),
	// which the health check, saying the database answers, does nothing
	// about.
	lockWait bool
}

func (c cause) Error() string { return c.msg }
func (c cause) Unwrap() error { return c.err }

// ExplainLimit is err said with the limit a DBA set for the role or
// database that refused it (statement_timeout, idle_in_transaction_session_timeout,
// a read-only default, ...) and what to do, naming role in the statement
// to run; err as it is when no such limit refused it. It is for the
// errors of what a front end does before any operation: connecting, or
// checking the schema (ExplainMigration those of migrating it). A
// migration that gave up waiting for a lock another session held
// (store.MigrationLockError), by a lock_timeout of its own that no
// setting changes, keeps its own words, which name that session and how
// to end it, and gets the migration as its next step.
func ExplainLimit(err error, role string) error {
	if errors.As(err, new(*store.MigrationLockError)) {
		return migrationLockError(err)
	}
	lim := store.LimitOf(err)
	if lim == store.NoLimit {
		return err
	}
	return limitError(err, lim, reads, role, callFewer)
}

// ExplainMigration is ExplainLimit for the errors of a migration of the
// schema (store.Store.Migrate, and the steps that go with it): a refusal
// by a limit the role or database sets is said in the words of a
// migration, a statement_timeout with the statement that resets it for
// role, the role that migrates, or a role without it to migrate as, and
// the migration is its next step. A migration given up on a lock keeps
// its own words, as ExplainLimit keeps them; err as it is otherwise.
func ExplainMigration(err error, role string) error {
	if errors.As(err, new(*store.MigrationLockError)) {
		return migrationLockError(err)
	}
	lim := store.LimitOf(err)
	if lim == store.NoLimit {
		return err
	}
	what, todo := limitAdvice(lim, role, callFewer)
	if lim == store.LimitStatementTimeout {
		what = "the database cancelled a statement of the migration: it ran longer than statement_timeout, set for the role that migrates or for the database, or by the options of the database URL (-c statement_timeout=...) or PGOPTIONS (or someone cancelled it)"
		todo = "reset it where it is set: for that role (ALTER ROLE " + store.RoleSQL(role) + " RESET statement_timeout, or ALTER ROLE " + store.RoleSQL(role) +
			" SET statement_timeout = '5min'; ALTER DATABASE ... RESET statement_timeout where the database sets it), or take it out of the database URL's options or PGOPTIONS; or run the migration as a role without it; then migrate again"
	}
	kind := err
	var hints []Hint
	if lim == store.LimitReadOnly {
		// A standby, or a transaction read-only by setting: migrating
		// again there is refused again.
		kind = errors.Join(ErrReadOnly, err)
	} else {
		hints = []Hint{hint(OpMigrate, "applies the schema migrations once the setting no longer cuts them")}
	}
	return &Error{Msg: fmt.Sprintf("%s (%v); %s", what, err, todo), Err: kind, Hints: hints}
}

// migrationLockError is err, a migration given up while another session
// held a lock it needs (store.MigrationLockError), which says which
// session and how to end it: unavailable until that session ends, then
// the migration runs again, its next step.
func migrationLockError(err error) error {
	return &Error{Msg: err.Error(), Err: errors.Join(ErrUnavailable, ErrLockWait, err),
		Hints: []Hint{hint(OpMigrate, "applies the schema migrations once the session holding the lock ended")}}
}

// limitError is err, refused by a limit a DBA set for the role or
// database pgbus uses, with the setting named, what the call changed and
// what to do. A bulk call that stopped partway keeps its own error, which
// says what it did and that the same call does the rest: only its cause
// is said so.
//
// A read-only transaction's refusal is of kind read_only (ErrReadOnly),
// as a standby's is: the same call is refused again until the setting
// changes, and a script tells it apart from a failure by its exit code.
func limitError(err error, lim store.Limit, e effect, role, fewer string) error {
	what, todo := limitAdvice(lim, role, fewer)
	kinded := func(err error) error {
		if lim == store.LimitReadOnly {
			return errors.Join(ErrReadOnly, err)
		}
		return err
	}
	if partial, again := partialCause(err); partial != nil {
		c := cause{msg: fmt.Sprintf("%s (%v)", what, *partial), err: kinded(*partial)}
		if again {
			c.msg += "; " + todo
		}
		*partial = c
		return err
	}
	parts := []string{fmt.Sprintf("%s (%v)", what, err)}
	if changed := e.changed(false); changed != "" {
		parts = append(parts, changed)
	}
	return &Error{Msg: strings.Join(append(parts, todo), "; "), Err: kinded(err)}
}

// explainFailure is first, the words of one message's failure in a bulk
// move ("message 42 in orders_dlq: " and err, or err alone), with what to
// do when err is a refusal the call's own error explains the same way
// when that message is all it moves: a privilege the role lacks (the
// grants), or a limit a DBA set for the role or database (store.LimitOf,
// the setting); and whether it was one.
func explainFailure(first string, err error, role string) (string, bool) {
	if err == nil || !strings.HasSuffix(first, err.Error()) {
		return first, false
	}
	at := strings.TrimSuffix(first, err.Error())
	if store.IsPermissionDenied(err) {
		what, todo := permissionAdvice(err, writesInSteps, role)
		return at + what + "; " + todo, true
	}
	lim := store.LimitOf(err)
	if lim == store.NoLimit {
		return first, false
	}
	what, todo := limitAdvice(lim, role, callFewer)
	return fmt.Sprintf("%s%s (%v); %s", at, what, err, todo), true
}

// sharedFailure is the refusal every message rep failed on shares, when
// it is one the call's own error explains (a privilege the role lacks, a
// limit a DBA set: explainFailure) and every failure recorded is of its
// SQLSTATE; nil when rep has no failure, or its failures differ (a
// deadline passed, a queue gone, another refusal). Messages another call
// took meanwhile are no failure.
func sharedFailure(rep *store.RetryReport) error {
	err := rep.Err()
	if err == nil || rep.Failed == 0 || !store.IsPermissionDenied(err) && store.LimitOf(err) == store.NoLimit {
		return nil
	}
	code, _ := store.SQLState(err)
	if code == "" {
		return nil
	}
	for _, f := range rep.Failures {
		if f.NotFound {
			continue
		}
		if f.DeadlinePassed || f.QueueGone != "" || !strings.HasSuffix(f.Error, "(SQLSTATE "+code+")") {
			return nil
		}
	}
	return err
}

// callFewer is how a call handles fewer messages, as the advice of a
// statement_timeout that cut it off says it, for an operation that did
// not say otherwise (withFewer): by its limit.
const callFewer = "have a call handle fewer messages (a limit)"

// fewerKey is the context key of withFewer.
type fewerKey struct{}

// withFewer is ctx of an operation that handles fewer messages as how
// says, rather than by a limit (callFewer), which it has none of; "" for
// one that handles one message, and cannot.
func withFewer(ctx context.Context, how string) context.Context {
	return context.WithValue(ctx, fewerKey{}, &how)
}

// fewerOf is how the operation under way in ctx handles fewer messages
// (withFewer), callFewer when it did not say.
func fewerOf(ctx context.Context) string {
	if how, ok := ctx.Value(fewerKey{}).(*string); ok {
		return *how
	}
	return callFewer
}

// limitAdvice says what limit lim is and what to do about it, naming role,
// the role pgbus connects as, in the statements to run, and fewer, how
// the call handles fewer messages (callFewer, or "" when it cannot).
func limitAdvice(lim store.Limit, role, fewer string) (what, todo string) {
	alter := "ALTER ROLE " + store.RoleSQL(role) + " SET "
	switch lim {
	case store.LimitReadOnly:
		return "the database takes no writes here: the transaction was read-only, as every one is on a standby (a read replica) or where default_transaction_read_only is on for the role or database",
			"point pgbus at the primary server instead, or have the DBA turn the default off (" + alter + "default_transaction_read_only = off); reads work as they are"
	case store.LimitStatementTimeout:
		return "the database cancelled a statement of the call: it ran longer than statement_timeout, set for the role or database, or by the options of the database URL (-c statement_timeout=...) or PGOPTIONS (or someone cancelled it)",
			"raise statement_timeout where it is set: for the role pgbus uses (" + alter + "statement_timeout = '5min'), or in the database URL's options or PGOPTIONS" + orFewer(fewer) + ", then try it again"
	case store.LimitCancelled:
		return "someone cancelled a statement of the call (pg_cancel_backend, or a cancel request of another client); no setting of pgbus's caused it",
			"try the call again; if it keeps happening, ask the DBA what cancels pgbus's statements"
	case store.LimitLockTimeout:
		return "a statement of the call waited for a lock another transaction held longer than lock_timeout, set for the role or database",
			"try the call again once that transaction ends; if it keeps happening, raise lock_timeout for the role pgbus uses (" + alter + "lock_timeout = '10s')"
	case store.LimitConflict:
		return "the database rolled the call's transaction back: it conflicted with another one running at the same time (a serialization failure or a deadlock), and did again each time it was run",
			"try the call again; if it keeps happening, check the default_transaction_isolation of the role or database (REPEATABLE READ and SERIALIZABLE make conflicts likelier): pgbus needs no more than READ COMMITTED"
	}
	if lim == store.LimitIdleInTransaction {
		return "the database ended the connection for sitting idle inside a transaction past idle_in_transaction_session_timeout, set for the role or database",
			"try the call again; if it keeps happening, raise it for the role pgbus uses (" + alter + "idle_in_transaction_session_timeout = '1min')"
	}
	return "the database ended the connection for sitting idle past idle_session_timeout, set for the role or database",
		"try the call again; if it keeps happening, turn it off for the role pgbus uses (" + alter + "idle_session_timeout = 0)"
}

// orFewer is fewer as the alternative the advice of a statement_timeout
// ends with: "" when there is none.
func orFewer(fewer string) string {
	if fewer == "" {
		return ""
	}
	return "; or " + fewer
}

// dlqGiven gives the error of a DLQ named where a queue is taken
// (checkWorkQueue) the next steps that run: its dead messages when it
// exists, else the stats of its queue when that exists, else the queues
// there are. It reports whether err was that error.
func (s *Service) dlqGiven(ctx context.Context, err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.dlq == "" {
		return false
	}
	base := strings.TrimSuffix(e.dlq, store.DLQSuffix)
	dlq, derr := s.store.QueueExists(ctx, e.dlq)
	queue, qerr := s.store.QueueExists(ctx, base)
	switch {
	case derr != nil || qerr != nil:
		// Not known: the steps of the check stand.
	case dlq:
		// The queue's name selects its DLQ, its queue dropped or not.
		e.Hints = []Hint{hint(OpDLQSummary, "its dead messages by cause", "queue", base)}
	case queue:
		e.Msg = fmt.Sprintf("%s would be the dead-letter queue of %s, which has none: give the queue, %s", e.dlq, base, base)
		e.Hints = []Hint{hint(OpQueueStats, "the queue's stats", "queue", base)}
	default:
		e.Msg = fmt.Sprintf("%s would be the dead-letter queue of %s, and neither exists: give the name of a queue there is", e.dlq, base)
		e.Hints = []Hint{hint(OpQueueStats, "lists the queues there are")}
	}
	return true
}

// tablesHeldError is held, a drop given up while other sessions held its
// queue's tables, with what it means and what to do: the database
// answers, and the sessions named are what to wait for or end.
func tablesHeldError(held *store.TablesHeldError) error {
	msg := fmt.Sprintf("queue %q was not dropped: other sessions held its tables, or its DLQ's group counts, for %s, and the drop takes them only all at once, so as to hold up no reads of them while it waits", held.Queue, held.Waited.Round(time.Second))
	if held.HeldBy != "" {
		msg += ": " + held.HeldBy + "; nothing was dropped: try again once they end their transactions (pg_stat_activity says what they run); if one is stuck, end it: " + held.Terminate
	} else {
		msg += "; nothing was dropped: try again in a moment, with a longer database call timeout if the queue is busy"
	}
	return &Error{Msg: msg, Err: errors.Join(ErrUnavailable, ErrLockWait, held)}
}

// queuesChangedError is err, a read of every DLQ that found a DLQ dropped
// at each of its reads (changed), said as what it is: queues created or
// dropped meanwhile, not a database in trouble, and the same call again
// as what to do. It is of kind unavailable, as a read given up on a lock
// is (the same call may succeed in a moment), without the health check,
// which would say OK. A bulk call stopped partway keeps its own error,
// which says what it did: only its cause is said so.
func queuesChangedError(err error, changed *store.QueuesChangedError, e effect) error {
	msg := fmt.Sprintf("the queues changed during the read (queues were created or dropped meanwhile): each of its %d reads of every DLQ found one it listed dropped before or while it read it (%v)", changed.Reads, changed.Err)
	if partial, again := partialCause(err); partial != nil {
		c := cause{msg: msg, err: errors.Join(ErrUnavailable, *partial), lockWait: true}
		if again {
			c.msg += "; try again"
		}
		*partial = c
		return err
	}
	parts := []string{msg}
	switch {
	case e.once():
		parts = append(parts, nothingChanged)
	case e == writesInSteps:
		parts = append(parts, e.changed(false))
	}
	parts = append(parts, "try again")
	return &Error{Msg: strings.Join(parts, "; "), Err: errors.Join(ErrUnavailable, err)}
}
