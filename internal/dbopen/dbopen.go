// Package dbopen opens the database a pgbus process works on: the server
// at a URL, or else the embedded PostgreSQL, which it starts and stops;
// then it migrates the schema or only checks that it is current.
//
// Commands that create queues or run workers migrate. The rest only check:
// they need no DDL, so a role that may only read can run the read ones, and
// none of them writes anything on start.
package dbopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

// SchemaVersion is the schema version this pgbus migrates a database to:
// its newest migration.
func SchemaVersion() (int, error) {
	all, err := schema.All()
	return len(all), err
}

// Options say which database to open.
type Options struct {
	// URL is the PostgreSQL URL; empty starts the embedded server.
	URL string
	// DataDir is the embedded server's data directory; empty is
	// embedpg.DefaultDataDir().
	DataDir string
	// Logger receives the embedded server's progress and the waits for
	// the server at URL.
	Logger *slog.Logger
	// WaitFor is how long Connect keeps trying while the server at URL
	// cannot be reached, is not taking connections yet (it is starting
	// or restarting) or has as many as it allows, for processes a
	// supervisor starts beside the database; 0 fails at once. Errors that waiting cannot cure, such as
	// a wrong password, fail at once either way.
	WaitFor time.Duration
	// CallTimeout bounds each try of Connect, and each Ping of a DB that
	// Dial or Connect opened (ReadyWhenReachable's tries among them), to
	// connect and have the server answer (the database call timeout); 0
	// leaves it to the connection's own timeout and ctx. A server, or
	// PgBouncer in front of it, that takes the connection and does not
	// answer (paused, or without a server connection to give) then fails
	// the try at that bound.
	CallTimeout time.Duration
	// ApplicationName names the sessions of the database at URL, or of the
	// embedded one, in pg_stat_activity ("pgbus work"), unless the URL
	// names its own application_name, which is kept (store.OpenLazyAs).
	ApplicationName string
	// URLAgain, when set, gives the URL as it is now, read again for each
	// new connection to the database at URL (store.OpenLazyFrom): the file
	// a deploy mounts it from, whose secret a rotation rewrites while the
	// process runs. Nil uses URL as it was at the start.
	URLAgain func() (string, error)
	// URLWords names where the URL was given, for advice that says to
	// change it ("--database-url"); "" says "the database URL".
	URLWords string
	// PoolInUse is set for a process that uses its pool's connections
	// at once (workers, a server, a benchmark): a pool that would pass
	// the connection limit of its role or database is warned of
	// (FitPool). A one-shot command, which holds one or two, has its
	// pool fitted without a warning, said at debug level only.
	PoolInUse bool
}

// DB is an open store and what it runs on.
type DB struct {
	*store.Store
	// Status is the schema's, once Prepare has run.
	Status store.MigrationStatus
	// Embedded is the embedded server, nil for one at a URL.
	Embedded *embedpg.Cluster

	logger      *slog.Logger  // Options.Logger
	callTimeout time.Duration // Options.CallTimeout, which bounds Ping
	urlWords    string        // Options.URLWords
	poolInUse   bool          // Options.PoolInUse
	// poolChecked is set once FitPool or ReadyWhenReachable compared the
	// pool with the connection limits: the warning is said once.
	poolChecked bool
}

// Connect connects to the database, starting the embedded server when no
// URL is given. Prepare readies its schema next.
func Connect(ctx context.Context, opts Options) (*DB, error) {
	db := &DB{logger: opts.Logger, callTimeout: opts.CallTimeout, urlWords: opts.URLWords, poolInUse: opts.PoolInUse}
	url := opts.URL
	if url == "" {
		cluster, err := embedpg.Start(ctx, embedpg.Options{DataDir: opts.DataDir, Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		db.Embedded, url = cluster, cluster.URL()
		opts.URLAgain = nil
	}
	s, err := openWaiting(ctx, url, opts)
	if err != nil {
		db.stopEmbedded()
		return nil, err
	}
	db.Store = s
	db.FitPool(ctx)
	return db, nil
}

// Dial is Connect for a process that serves while its database does not
// answer yet: the embedded server is started and connected as Connect
// does, but a server at a URL is neither waited for nor connected to.
// Only a URL that cannot be read fails (ErrBadURL). Ping tells whether the
// database answers; ReadyWhenReachable waits for it, and readies it.
func Dial(ctx context.Context, opts Options) (*DB, error) {
	if opts.URL == "" {
		return Connect(ctx, opts)
	}
	s, err := store.OpenLazyFrom(opts.URL, opts.ApplicationName, opts.URLAgain)
	if err != nil {
		return nil, err
	}
	return &DB{Store: s, logger: opts.Logger, callTimeout: opts.CallTimeout, urlWords: opts.URLWords, poolInUse: opts.PoolInUse}, nil
}

// Ping checks that the database answers, connecting when the pool holds
// no connection (store.Store.Ping), bounded by Options.CallTimeout: a
// server, or PgBouncer in front of it, that takes the connection and does
// not answer (paused, or without a server connection to give) fails it
// then, as unreachable, rather than hold it until the pooler gives up
// (PgBouncer's query_wait_timeout, two minutes by default).
func (d *DB) Ping(ctx context.Context) error {
	if d.callTimeout > 0 {
		ctx = store.WithStatementTimeout(ctx, d.callTimeout)
	}
	return d.Store.Ping(ctx)
}

// Readying is what ReadyWhenReachable tells as it goes: each failure, to
// connect or to ready the schema, and nil when it connected and readies
// the schema now.
type Readying func(why error)

// ReadyWhenReachable connects to the database and readies its schema as
// Prepare does (migrate says how), comparing its pool with the connection
// limits once the database first answers (FitPool, but that the pool, in
// use already, keeps its size: the warning says to restart the process or
// what pool_max_conns to set), trying again while either fails (each
// try to connect bounded as Ping bounds it), with
// Connect's growing delay (from 250ms to 5s), until it succeeds or ctx
// ends. It tells each failure to readying, and logs it (its first tries,
// then once a minute while the failure stays the same, and whenever it
// changes): a server that
// cannot be reached or refuses this process's connections (a wrong
// password may be set right, a database that does not exist be created,
// while the process waits), or a schema that could not be readied (one
// that pgbus migrate has not migrated yet, for a process that only
// checks it). An error no wait can mend, that only another pgbus can
// (Permanent: a schema a newer pgbus migrated that this one cannot
// read), ends the wait: it is returned, as Prepare would have at start.
func (d *DB) ReadyWhenReachable(ctx context.Context, migrate bool, readying Readying) error {
	delay := 250 * time.Millisecond
	var quiet waitLog
	for {
		err := d.Ping(ctx)
		if err == nil {
			// Once the database first answers, whether or not its
			// schema is ready: the Store is in use already, so its pool
			// keeps its size, and the warning says what to set.
			d.checkPool(ctx, fitAtRestart)
			readying(nil)
			if err = d.Prepare(ctx, migrate); err == nil {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		readying(err)
		if Permanent(err) {
			return err
		}
		if d.logger != nil {
			var msg string
			switch {
			case store.IsCrowded(err):
				msg = "pgbus: PostgreSQL has as many connections as it allows, and refuses more; trying again until other clients let theirs go. To end it, " + store.CrowdedAdvice
			case store.IsUnreachable(err):
				msg = "pgbus: PostgreSQL is not reachable yet; trying again"
			case store.IsConnectFailure(err):
				msg = "pgbus: PostgreSQL refuses this process's connections; trying again"
			default:
				msg = "pgbus: the database's pgbus schema could not be readied; trying again"
			}
			if quiet.due(msg+"\x00"+err.Error(), time.Now()) {
				d.logger.Warn(msg, "err", err, "in", delay, "tries", quiet.tries)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// waitLog says which failures of a long wait are logged: the first
// loudTries, then one a minute while the failure stays the same, and
// each that differs from the one before.
type waitLog struct {
	tries  int       // failures so far
	last   string    // the failure before
	logged time.Time // when one was last logged
}

// loudTries are the failures of a wait that are all logged: a few
// seconds' worth, at its growing delay.
const loudTries = 3

// due counts a failure, why, and reports whether to log it at now.
func (w *waitLog) due(why string, now time.Time) bool {
	w.tries++
	changed := why != w.last
	w.last = why
	if w.tries <= loudTries || changed || now.Sub(w.logged) >= time.Minute {
		w.logged = now
		return true
	}
	return false
}

// Permanent reports whether err, a failure to ready the schema, is one
// no wait and no administrator can mend, only another pgbus: a schema a
// newer pgbus migrated whose record lacks migrations of this one
// (ErrSchemaNewer). Missing privileges, PGMQ's tables missing, or a
// schema older than this pgbus can be set right while a process waits.
func Permanent(err error) bool { return errors.Is(err, ErrSchemaNewer) }

// openWaiting opens the store at url, trying again with a growing delay
// while the server is unreachable, or has as many connections as it
// allows, and opts.WaitFor has not run out: other processes let theirs go
// as they stop or restart, as happens in a deploy.
func openWaiting(ctx context.Context, url string, opts Options) (*store.Store, error) {
	deadline := time.Now().Add(opts.WaitFor)
	delay := 250 * time.Millisecond
	for {
		s, err := store.OpenFrom(store.WithStatementTimeout(ctx, opts.CallTimeout), url, opts.ApplicationName, opts.URLAgain)
		crowded := store.IsCrowded(err)
		if err == nil || !crowded && !store.IsUnreachable(err) || time.Now().Add(delay).After(deadline) {
			return s, err
		}
		if opts.Logger != nil {
			if crowded {
				opts.Logger.Warn("pgbus: PostgreSQL has as many connections as it allows, and refuses more; trying again until other clients let theirs go. To end it, "+store.CrowdedAdvice,
					"err", err, "in", delay, "until", deadline.Format(time.RFC3339))
			} else {
				opts.Logger.Warn("pgbus: PostgreSQL is not reachable yet; trying again", "err", err, "in", delay, "until", deadline.Format(time.RFC3339))
			}
		}
		select {
		case <-ctx.Done():
			if crowded {
				return nil, fmt.Errorf("stopped waiting for PostgreSQL (%w); it refused connections, having as many as it allows: %v", ctx.Err(), err)
			}
			return nil, fmt.Errorf("stopped waiting for PostgreSQL (%w); it was not reachable: %v", ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// Errors of Prepare: the schema is missing or older than this build, or
// newer and lacking this build's migrations in its record, or the role may
// not read what the check reads (which says what it lacks).
var (
	ErrSchemaMissing = store.ErrSchemaMissing
	ErrSchemaOld     = store.ErrSchemaOld
	ErrSchemaNewer   = store.ErrSchemaNewer
	ErrPermission    = store.ErrPermission
	// ErrStandby comes with ErrSchemaMissing or ErrSchemaOld on a standby,
	// whose schema is the primary's to migrate.
	ErrStandby = store.ErrStandby
	// ErrPGMQMissing comes with ErrSchemaMissing where schema pgbus is
	// there without PGMQ's tables, which no migration makes.
	ErrPGMQMissing = store.ErrPGMQMissing
)

// ErrBadURL is matched by Connect's errors about a database URL that
// cannot be read at all (malformed, as opposed to naming a server that
// does not answer).
var ErrBadURL = store.ErrBadURL

// IsPermissionDenied reports whether err is PostgreSQL refusing for want
// of a privilege, or wraps ErrPermission.
func IsPermissionDenied(err error) bool { return store.IsPermissionDenied(err) }

// IsCrowded reports whether err is the server refusing a connection
// because it has as many as it allows (SQLSTATE 53300,
// too_many_connections: max_connections, or a role's or database's
// CONNECTION LIMIT, reached).
func IsCrowded(err error) bool { return store.IsCrowded(err) }

// CrowdedAdvice says what to do about a server that has as many
// connections as it allows, naming the settings that decide it; it names
// the URL as "the database URL".
const CrowdedAdvice = store.CrowdedAdvice

// IsReadOnly reports whether err is a write refused by a read-only
// transaction (a standby, or default_transaction_read_only).
func IsReadOnly(err error) bool { return store.LimitOf(err) == store.LimitReadOnly }

// Prepare applies any pending migration when migrate is true; otherwise
// it checks that the schema is current and changes nothing, failing with
// ErrSchemaMissing or ErrSchemaOld when it is not.
//
// Migrating also repairs dead-letter queues made without what pgbus gives
// one (store.Migrate): it logs each it repaired, and warns of each it
// could not, with what it lacks and which role's pgbus migrate adds it.
//
// On a schema a newer pgbus migrated, either way, it changes nothing and
// warns that this pgbus is older than the database, as the process runs
// on (and a rolled-back deploy may leave it there): its readers should
// know what to upgrade, and that it keeps working meanwhile.
func (d *DB) Prepare(ctx context.Context, migrate bool) (err error) {
	if !migrate {
		d.Status, err = d.CheckSchema(ctx)
	} else {
		start := time.Now()
		if d.Status, err = d.Migrate(ctx); err == nil {
			d.logUpgrade(time.Since(start))
			d.logRepairs()
		}
	}
	if err == nil {
		d.LogNewer(d.Status, d.logger)
	}
	return err
}

// logUpgrade says that Prepare upgraded a schema an older pgbus migrated,
// and how long it took: in a rolling deploy, the first new process
// migrates the database under the old ones, and whoever deploys looks for
// that in its log. It says from which version to which the schema went
// (store.MigrationStatus.Upgrade), the versions this process applied
// itself and those other processes migrating at once applied, so that
// their logs add up rather than each claim the whole upgrade. A first
// install, on a database without the schema, is no news, whichever of
// the processes started at once applied what of it, and a process that
// applied nothing says nothing.
func (d *DB) logUpgrade(took time.Duration) {
	from, to, byOthers, ok := d.Status.Upgrade()
	if d.logger == nil || !ok {
		return
	}
	attrs := []any{"from_version", from, "to_version", to, "applied_versions", versionRanges(d.Status.AppliedVersions)}
	if len(byOthers) > 0 {
		attrs = append(attrs, "applied_by_others", versionRanges(byOthers))
	}
	attrs = append(attrs, "took", took.Round(time.Millisecond).String())
	d.logger.Info("pgbus: upgraded the database's pgbus schema", attrs...)
}

// versionRanges writes versions, in order, as runs: "19-22, 25".
func versionRanges(versions []int) string {
	var parts []string
	for i := 0; i < len(versions); {
		j := i
		for j+1 < len(versions) && versions[j+1] == versions[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(versions[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", versions[i], versions[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// logRepairs logs the dead-letter queues Migrate repaired or could not.
func (d *DB) logRepairs() {
	if d.logger == nil {
		return
	}
	for _, q := range d.Status.DLQsRepaired {
		d.logger.Info("pgbus: gave a dead-letter queue the index, filter statistics and group counts it lacked", "dlq", q)
	}
	for _, g := range d.Status.DLQGaps {
		d.logger.Warn("pgbus: a dead-letter queue lacks what pgbus gives one for fast filters and summaries; left as it is",
			"dlq", g.DLQ, "missing", strings.Join(g.Missing, ", "), "why", g.Reason, "next", g.Next)
	}
}

// Role is the database role connected as, for messages about privileges.
func (d *DB) Role() string { return d.User() }

// Where describes the database for status lines, without credentials.
func (d *DB) Where() string {
	if d.Embedded != nil {
		return "embedded PostgreSQL in " + d.Embedded.DataDir()
	}
	return "PostgreSQL at " + d.Pool().Config().ConnConfig.Host
}

// Close closes the pool and stops the embedded server if this process was
// its last user.
func (d *DB) Close() {
	d.Store.Close()
	d.stopEmbedded()
}

// stopEmbedded stops the embedded server, if this process was its last
// user, and logs why it could not: the server may be left running, which
// whoever looks after the machine needs to know.
func (d *DB) stopEmbedded() {
	if d.Embedded == nil {
		return
	}
	if err := d.Embedded.Stop(context.Background()); err != nil && d.logger != nil {
		d.logger.Error("pgbus: stopping the embedded PostgreSQL failed", "err", err)
	}
}
