package ops

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/pgbus/pgbus/store"
)

// Gate holds the calls of the services that share it (Options.Gate) while
// their database is not ready for them: a process that starts while its
// database does not answer serves at once, and its calls are refused,
// saying why and what to do, until it has connected and migrated (or
// checked) the schema, rather than run on a schema that is missing or
// older than this pgbus. It is safe for concurrent use.
//
// A write it refuses is recorded as one refused during an outage after
// start: the database cannot take its audit entry before it is ready
// either, so the entry is held in memory, untried, written once the gate
// opens, and given to the log as unrecorded by Service.Close when the
// process stops first (refusedByGate, holdAudit).
type Gate struct {
	held atomic.Pointer[gateHold]
}

// gateHold is why a Gate holds calls; none once it is open. untried: the
// database has not been tried yet; else err, or nil while the schema is
// being readied.
type gateHold struct {
	err     error
	untried bool
}

// ErrNotReady is wrapped by the refusal of every call a Gate holds: this
// process has not readied its database yet (it does not answer, or its
// schema is not ready), and serves the call once it has.
var ErrNotReady = errors.New("the database is not ready for this process yet")

// ErrSchemaNotReady is wrapped, beside ErrNotReady, by the refusal of a
// call a Gate holds while the database answers: its schema is being
// migrated or checked, or cannot be used yet (missing, older or newer
// than this pgbus, out of the role's reach), which the refusal says.
var ErrSchemaNotReady = errors.New("the database answers, but its pgbus schema is not ready for this process yet")

// NewGate returns a gate that holds calls: the database has not been
// tried yet. Hold says why as the tries go; Open lets calls through.
func NewGate() *Gate {
	g := &Gate{}
	g.held.Store(&gateHold{untried: true})
	return g
}

// Hold holds calls from now on, for why: the last failure to connect to
// the database, or to migrate or check its schema; nil while the schema
// is being migrated or checked. A nil why after a failure to ready the
// schema (a try again) keeps that failure, which the calls go on saying
// with what mends it, until the try ends: that it tries again says
// nothing new.
func (g *Gate) Hold(why error) {
	if why == nil {
		if h := g.held.Load(); h != nil && h.err != nil && !connectFailed(h.err) {
			return
		}
	}
	g.held.Store(&gateHold{err: why})
}

// connectFailed reports whether err, why a Gate holds calls, is a failure
// to connect to the database rather than to ready its schema.
func connectFailed(err error) bool {
	return store.IsUnreachable(err) || store.IsCrowded(err) || store.IsConnectFailure(err)
}

// Open lets calls through from now on: the database answers and its
// schema is ready.
func (g *Gate) Open() { g.held.Store(nil) }

// gateThrough is the context key of Through.
type gateThrough struct{}

// Through returns ctx, whose calls g lets through while it holds others:
// those of the process's own start-up steps (its workers' queues made),
// which run once the schema is ready and before g opens.
func (g *Gate) Through(ctx context.Context) context.Context {
	return context.WithValue(ctx, gateThrough{}, g)
}

// Ready reports whether the gate lets calls through; a nil Gate always
// does.
func (g *Gate) Ready() bool { return g == nil || g.held.Load() == nil }

// refusal is the error of a call with ctx the gate holds, nil when it
// lets it through. The database not answering, or refusing this process's
// connections, is ErrUnavailable with the health check as the next step
// (health says UNREACHABLE, and why); a schema that is missing or older
// than this pgbus also names the migration, and PGMQ's tables missing the
// migration that installs PGMQ from its script.
func (g *Gate) refusal(ctx context.Context) error {
	if g == nil || ctx.Value(gateThrough{}) == g {
		return nil
	}
	h := g.held.Load()
	if h == nil {
		return nil
	}
	const retry = "; this process keeps trying every few seconds, and serves calls once the database is ready: try the call again then"
	switch {
	case h.untried:
		return &Error{Msg: "the database does not answer yet: this process started while it could not connect, and is connecting" + retry,
			Err: errors.Join(ErrUnavailable, ErrNotReady), Hints: []Hint{healthHint()}}
	case h.err == nil:
		return &Error{Msg: "the database answers, and this process, which started while it could not connect, is readying its pgbus schema (migrating or checking it, which waits while another process migrates it)" + retry,
			Err: errors.Join(ErrUnavailable, ErrNotReady, ErrSchemaNotReady), Hints: []Hint{healthHint()}}
	case errors.Is(h.err, store.ErrSchemaMissing) || errors.Is(h.err, store.ErrSchemaOld):
		e := &Error{Msg: "the database answers, but its pgbus schema is not ready for this pgbus: " + h.err.Error() + retry,
			Err: errors.Join(ErrUnavailable, ErrNotReady, ErrSchemaNotReady, h.err), Hints: []Hint{healthHint()}}
		switch {
		case errors.Is(h.err, store.ErrStandby): // a standby's migration is the primary's
		case errors.Is(h.err, store.ErrPGMQMissing):
			// The step the front end names at start too.
			e.Hints = append(e.Hints, installPGMQHint())
		default:
			e.Hints = append(e.Hints, hint(OpMigrate, "applies the schema migrations this pgbus needs"))
		}
		return e
	}
	var msg string
	kind := errors.Join(ErrUnavailable, ErrNotReady, h.err)
	switch {
	case store.IsCrowded(h.err):
		msg = "the database server has no free connection slots for this process (too many connections, SQLSTATE 53300): it answers, but refused the connections of this process, which started then, as it holds as many as it allows (max_connections, or the role's or database's CONNECTION LIMIT), and the last try failed: "
	case store.IsUnreachable(h.err):
		msg = "the database does not answer yet: this process started while it could not connect, and the last try failed: "
	case store.IsConnectFailure(h.err):
		msg = "the database refuses this process's connections: "
	default:
		msg = "the database answers, but this process could not ready its pgbus schema: "
		kind = errors.Join(ErrUnavailable, ErrNotReady, ErrSchemaNotReady, h.err)
	}
	msg, _ = RedactText(msg + h.err.Error() + retry)
	return &Error{Msg: msg, Err: kind, Hints: []Hint{healthHint()}}
}
