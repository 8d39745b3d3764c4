package engine

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/store"
)

// outageReminder is how often a database that still cannot be reached is
// said again: often enough that a person tailing the log sees it lasts,
// seldom enough that an outage of an hour is a screenful, not thousands.
const outageReminder = time.Minute

// crowdedQuiet is how long a server that refused connections for want of
// slots (SQLSTATE 53300) must refuse none before its outage is over. The
// pool's open connections go on working while new ones are refused, so
// successes and refusals alternate through such an outage; without the
// pause, each would be told as an outage and its end. It is twice the
// longest pause between two tries of a loop of the workers (the
// notification listener's, 10 seconds), and more: at 15 seconds, the
// refusals of loops that need a new connection only now and then came
// 12 to 18 seconds apart, and the outage was told to end every time.
const crowdedQuiet = 30 * time.Second

// downQuiet is how long a database that did not answer must fail no call
// before a success ends its outage. A server shutting down (or an
// administrator's pg_terminate_backend) ends its sessions one by one: a
// call on one it has not ended yet succeeds between the failures of
// others, and was told as the end of the outage, 2 ms after its start,
// and then the outage again.
const downQuiet = time.Second

// outage tells the log that the database does not answer, or refuses new
// connections because it has as many as it allows, once for the whole
// process, rather than once per loop and per retry: each queue's reads,
// the outcome writers, the notification listener, the heartbeats and the
// breakers all meet the same outage at once, and each used to say so at
// every retry, burying the one line that matters. It says when the
// database answers again, and after how long, so that the end of an
// outage is as plain as its start.
type outage struct {
	log *slog.Logger
	// renew replaces the store's connections after a write refused as
	// read-only (store.RenewReadOnlyConnections); nil in tests of the
	// outage alone.
	renew func()
	// ended is told when an outage ends, so that the process's heartbeat
	// is written at once: its row went stale during the outage, and until
	// the next beat the process's own probes, reading the registry, saw
	// no running worker for its queues.
	ended chan struct{}
	down  atomic.Bool // read on every success, so kept outside mu

	mu      sync.Mutex
	since   time.Time // when the first failure of this outage was met
	said    time.Time // when the outage was last logged
	last    time.Time // when the last failure of this outage was met
	crowded bool      // the server refused connections in this outage
	refused bool      // the server refused the role's logins in this outage
	// readOnly: the server took no writes in this outage (a primary
	// turned standby, default_transaction_read_only turned on), while
	// reads went on answering.
	readOnly bool
	// diskFull: the server could not write for want of disk space, while
	// reads went on answering.
	diskFull bool
	// noFiles: this process had no file descriptor left to open a
	// connection with (store.OutOfFiles), while the pool's open
	// connections went on answering.
	noFiles bool

	// poolWaitSaid is when a wait for a connection of a busy pool was last
	// said at warn (sayPoolWait).
	poolWaitSaid lastSaid
}

// failed reports whether err says the database cannot be reached (down,
// restarting, the network to it cut, or silent past a call's deadline:
// bounded), takes no more connections (max_connections or a CONNECTION
// LIMIT reached), or takes no writes (a standby, a full disk; reads
// answer meanwhile, as a crowded server's open connections do), logging so at the first
// such failure of an outage and then once per outageReminder. A caller
// that gets true must not log err itself; other errors are its own to log.
func (o *outage) failed(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, store.ErrConnectionWait) {
		o.sayPoolWait(err)
		return true
	}
	crowded := store.IsCrowded(err)
	readOnly := store.LimitOf(err) == store.LimitReadOnly
	code, _ := store.SQLState(err)
	diskFull := code == "53100" // disk_full
	noFiles := store.OutOfFiles(err)
	// A password changed, or pg_hba.conf changed, under running workers:
	// their open connections go on, the new ones are refused.
	refused := strings.HasPrefix(code, "28")
	cut := store.IsCut(err)
	if !crowded && !readOnly && !diskFull && !refused && !noFiles && !store.IsUnreachable(err) && !unanswered(err) {
		return false
	}
	if readOnly && o.renew != nil {
		o.renew()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	o.last = now
	cause := outageCause{crowded: crowded, readOnly: readOnly, diskFull: diskFull, refused: refused, noFiles: noFiles, cut: cut}
	switch {
	case !o.down.Load():
		o.down.Store(true)
		o.since, o.said, o.crowded, o.readOnly, o.diskFull, o.refused, o.noFiles = now, now, crowded, readOnly, diskFull, refused, noFiles
		o.sayStart(cause, code, err)
	case crowded && !o.crowded || readOnly && !o.readOnly || diskFull && !o.diskFull || refused && !o.refused || noFiles && !o.noFiles:
		// The cause shows itself only now: a pool waiting for a slot the
		// server will not give first fails as a call that got no answer.
		// Said at once, with what to do, rather than a minute on.
		o.said = now
		o.note(cause)
		o.sayStart(cause, code, err)
	case now.Sub(o.said) >= outageReminder:
		o.said = now
		o.note(cause)
		o.sayStill(cause, now.Sub(o.since).Round(time.Second).String(), err)
	default:
		o.note(cause)
	}
	return true
}

// sayPoolWait logs err, a call given up while it waited for a connection
// of the pool every one of which other calls held (poolWaitError): at
// warn once per outageReminder, at debug between. The database answers:
// it is no outage, and the workers' calls wait for whoever holds the
// pool's connections, a program sharing the pool among them.
func (o *outage) sayPoolWait(err error) {
	log := o.log.Debug
	if o.poolWaitSaid.due(time.Now(), outageReminder) {
		log = o.log.Warn
	}
	log("pgbus: the workers' calls wait for a connection of the pool, every one of which is in use (by this process's calls, or by the program sharing the pool: its open transactions, its long statements); the database answers. "+
		"The workers keep their running jobs, hold the outcomes to write and retry, saying so here once a minute: give the pool more connections (pool_max_conns in the database URL), or hold fewer of them at once",
		"err", err)
}

// outageCause is what one failure says of an outage's cause; none of
// them is a database that does not answer. cut, a connection that broke
// without a word from the server, is said only at an outage's start: the
// new connections after it meet what lasts (refused, or not answered).
type outageCause struct{ crowded, readOnly, diskFull, refused, noFiles, cut bool }

// note adds the cause of one failure to those met in this outage; o.mu
// is held.
func (o *outage) note(c outageCause) {
	o.crowded, o.readOnly, o.diskFull, o.refused, o.noFiles = o.crowded || c.crowded, o.readOnly || c.readOnly, o.diskFull || c.diskFull, o.refused || c.refused, o.noFiles || c.noFiles
}

// sayStart logs an outage, or a cause of it met only now, in full: what
// it is, what the workers do meanwhile, and what ends it.
func (o *outage) sayStart(c outageCause, code string, err error) {
	switch {
	case c.noFiles:
		o.log.Warn("pgbus: this process cannot open connections to the database: it has no file descriptor left; the workers keep their running jobs, hold the outcomes to write, and retry until it can, saying so here once a minute; "+
			"to end it, raise the process's limit of open files (ulimit -n, LimitNOFILE= in a systemd unit, the container's nofile limit) or lower the queues' concurrency", "err", err)
	case c.refused:
		o.log.Warn("pgbus: the database refuses this role's new connections (its password changed, or pg_hba.conf no longer lets it in from here); "+
			"the workers keep their running jobs, hold the outcomes to write, and retry until it takes them, saying so here once a minute: "+
			"put the role's current password in the database URL and restart the process, or have the DBA let the role in again", "err", err)
	case c.diskFull:
		o.log.Warn("pgbus: the database server is out of disk space: it cannot write; the workers keep their running jobs, hold the outcomes to write, and retry until it can, saying so here once a minute; "+
			"free disk space on it (or give it a larger volume)", "err", err)
	case c.readOnly:
		o.log.Warn("pgbus: the database takes no writes (it is a standby now, or default_transaction_read_only was turned on for the role or database); "+
			"the workers keep their running jobs, hold the outcomes to write, and retry until it takes them, saying so here once a minute; point the database URL at the primary, or turn the setting off",
			"err", err)
	case c.crowded:
		o.log.Warn("pgbus: the database refuses new connections: it has as many as it allows; the workers keep their running jobs, hold the outcomes to write, and retry until it takes them, saying so here once a minute; "+
			"to end it, "+store.CrowdedAdvice, "err", err)
	case c.cut:
		o.log.Warn("pgbus: the database does not answer: the connection to it was cut (the server, or a connection pooler in front of it such as PgBouncer, was restarted or killed, or the network path dropped it); "+
			"the workers reconnect, keep their running jobs, hold the outcomes to write, and retry until the database answers, saying so here once a minute while it does not",
			"err", err)
	default:
		o.log.Warn("pgbus: the database does not answer ("+store.UnansweredCauses+endedBy(code)+"); the workers keep their running jobs, hold the outcomes to write, and retry until it answers, saying so here once a minute"+adviceFor(err),
			"err", err)
	}
}

// sayStill logs that an outage lasts, for how long, and what ends it.
func (o *outage) sayStill(c outageCause, lasted string, err error) {
	switch {
	case c.noFiles:
		o.log.Warn("pgbus: this process still has no file descriptor left to open connections to the database with; the workers retry until it can: raise its limit of open files (ulimit -n, LimitNOFILE=) or lower the queues' concurrency",
			"for", lasted, "err", err)
	case c.refused:
		o.log.Warn("pgbus: the database still refuses this role's new connections; the workers retry until it takes them: put the role's current password in the database URL and restart the process, or have the DBA let the role in again",
			"for", lasted, "err", err)
	case c.diskFull:
		o.log.Warn("pgbus: the database server is still out of disk space; the workers retry until it can write: free disk space on it",
			"for", lasted, "err", err)
	case c.readOnly:
		o.log.Warn("pgbus: the database still takes no writes; the workers retry until it does: point the database URL at the primary",
			"for", lasted, "err", err)
	case c.crowded:
		o.log.Warn("pgbus: the database still refuses new connections, having as many as it allows; the workers retry until it takes them: "+store.CrowdedAdvice,
			"for", lasted, "err", err)
	default:
		o.log.Warn("pgbus: the database still does not answer; the workers retry until it answers"+adviceFor(err),
			"for", lasted, "err", err)
	}
}

// adviceFor is what to check about err, a failure of an outage of a
// database that does not answer, as the health check and the probes say
// it (store.DatabaseAdvice), after a colon; "" when there is none or err
// says it already.
func adviceFor(err error) string {
	if advice := store.DatabaseAdvice(err); advice != "" && !strings.Contains(err.Error(), advice) {
		return ": " + advice
	}
	return ""
}

// endedBy adds to the outage's words who may have ended a connection
// the server closed with SQLSTATE code: 57P01 is both a shutdown's and an
// administrator's pg_terminate_backend, which a running server's
// reconnections then show.
func endedBy(code string) string {
	if code == "57P01" { // admin_shutdown
		return ", or an administrator ended its sessions with pg_terminate_backend"
	}
	return ""
}

// answered notes that a call begun at start succeeded, and logs the end
// of an outage if one was under way: for a database that did not answer
// once no call has failed for downQuiet, and for one that refused
// connections once it has refused none for crowdedQuiet. A call begun before the outage was met says nothing
// of its end: a server shutting down finishes some statements just after
// it cut other connections.
func (o *outage) answered(start time.Time) {
	if !o.down.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	quiet := downQuiet
	if o.crowded || o.readOnly || o.diskFull || o.refused || o.noFiles {
		quiet = crowdedQuiet
	}
	if !o.down.Load() || start.Before(o.since) || time.Since(o.last) < quiet {
		return
	}
	o.down.Store(false)
	select {
	case o.ended <- struct{}{}:
	default:
	}
	if o.noFiles {
		o.log.Info("pgbus: this process opens connections to the database again; the workers carry on",
			"after", time.Since(o.since).Round(100*time.Millisecond).String())
		return
	}
	if o.diskFull {
		o.log.Info("pgbus: the database server can write again; the workers carry on",
			"after", time.Since(o.since).Round(100*time.Millisecond).String())
		return
	}
	if o.readOnly {
		o.log.Info("pgbus: the database takes writes again; the workers carry on",
			"after", time.Since(o.since).Round(100*time.Millisecond).String())
		return
	}
	if o.crowded || o.refused {
		o.log.Info("pgbus: the database takes new connections again; the workers carry on",
			"after", time.Since(o.since).Round(100*time.Millisecond).String())
		return
	}
	o.log.Info("pgbus: the database answers again; the workers carry on",
		"after", time.Since(o.since).Round(100*time.Millisecond).String())
}
