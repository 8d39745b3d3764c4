// Package store holds every SQL statement pgbus runs on its own and PGMQ's
// data: the connection pool, the migration runner, and the queue operations
// on the PGMQ table layout. (Package embedpg runs the few statements that
// set up and look after the embedded server itself.)
//
// Queue names reach SQL only as quoted identifiers built from validated names;
// payloads and headers only as parameters.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a handle on one pgbus database. It is safe for concurrent use.
// Make one with Open, OpenLazy or New: a Store over no pool (New given
// nil, or a zero Store) refuses its statements with ErrInvalid, and its
// Close does nothing.
type Store struct {
	pool *pgxpool.Pool
	// db runs statements, retrying one once on another connection when its
	// connection was dead and it was never sent; reads also retries reads
	// whose connection broke while they ran.
	db, reads db

	// tables caches per-queue column facts (PGMQ versions differ); cleared
	// for a queue when it is dropped.
	tables sync.Map // physical queue name -> tableInfo

	cursorKeys cursorKey

	// identity is the database the pool is on, read by the first send in
	// a caller's transaction, which must be on the same one.
	identity atomic.Pointer[dbIdentity]

	// encoding is the database's server_encoding, once a write of
	// pgbus's own texts asked (textFit).
	encoding atomic.Pointer[string]

	// upSince is the time AssumeUpSince set, nil for the server's start.
	upSince atomic.Pointer[time.Time]

	// closing is closed by Close, or once a statement found the pool
	// closed by its owner.
	closing *closing
	// recordRead, set by tests, runs when migrate has read which
	// migrations are recorded, before it applies any: where another
	// process may apply some.
	recordRead func()

	// sockets are the pool's network connections, which Close ends once
	// pgx gave up on them; nil for a pool New was given.
	sockets *sockets

	// aside is held by the one question asked on a connection made beside
	// an exhausted pool (diagnose): however many calls time out at once,
	// they add one connection to the database's, not one each.
	aside chan struct{}

	// clockSkew is how far the server's clock is ahead of ours, in
	// nanoseconds, as SyncClock measured it at clockSyncedAt (Unix
	// nanoseconds of our clock; 0 before it did).
	clockSkew, clockSyncedAt atomic.Int64

	// warnedNewer is set once LogNewer has warned of a newer schema.
	warnedNewer atomic.Bool

	// drops lets DropFrozenConnections drop the pool's connections once
	// per freeze, for every caller that shares the store.
	drops connDrops
	// readOnlyDrops paces RenewReadOnlyConnections.
	readOnlyDrops connDrops

	// reread gives new connections the URL as it is now, for a Store
	// OpenLazyFrom made; nil otherwise.
	reread *reread

	// exactLimit replaces ExactCountLimit when set (SetExactCountLimit).
	exactLimit atomic.Int64
	// exactPages replaces ExactCountPages when set (SetExactCountPages).
	exactPages atomic.Int64

	// opened is what OpenLazyFrom made the Store of, for Resized; nil for
	// a Store New made over a pool of the caller's.
	opened *openedWith
}

// openedWith is what a Store was opened with.
type openedWith struct {
	url, app string
	again    URLSource
}

// ErrBadURL is matched (errors.Is) by Open's errors about a database URL
// it cannot read at all: the caller's input is wrong, and no server was
// asked, unlike a URL that reads well and names a server that does not
// answer.
var ErrBadURL = errors.New("store: malformed database URL")

// badURL is an error about the URL itself; its text is the wrapped one's.
type badURL struct{ error }

func (e badURL) Is(target error) bool { return target == ErrBadURL }
func (e badURL) Unwrap() error        { return e.error }

// DefaultConnectTimeout bounds each new connection of a Store that Open
// made, unless the URL sets connect_timeout (0 waits as long as the
// network does): a server that accepts connections but does not answer
// (frozen, or behind a path that drops its packets) would otherwise hold
// a command, or a worker's reconnection, for as long as the operating
// system keeps trying, minutes or forever.
const DefaultConnectTimeout = 10 * time.Second

// setsConnectTimeout reports whether url, or the environment pgx reads
// it with, names a connect_timeout, 0 included.
func setsConnectTimeout(url string) bool {
	_, env := os.LookupEnv("PGCONNECT_TIMEOUT")
	return env || setsParam(url, "connect_timeout")
}

// setsParam reports whether the database URL dsn, written as a URL
// (postgres://...?key=value) or as key=value pairs, sets key: a value
// that only holds its name (a password, an application_name) does not.
func setsParam(dsn, key string) bool {
	if u, err := neturl.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u.Query().Has(key)
	}
	for _, field := range strings.Fields(dsn) {
		if k, _, ok := strings.Cut(field, "="); ok && k == key {
			return true
		}
	}
	return false
}

// Open connects to the database at url. It does not migrate: call Migrate.
// The pool pings a connection idle for more than 100ms before handing it
// out, so connections that died (say, in a server restart) are replaced.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenAs(ctx, url, "")
}

// OpenAs is Open whose sessions carry application_name app, as
// pg_stat_activity shows it, unless url (or PGAPPNAME) names one:
// OpenLazyAs.
func OpenAs(ctx context.Context, url, app string) (*Store, error) {
	return OpenFrom(ctx, url, app, nil)
}

// OpenFrom is OpenAs whose new connections take the database's address
// and login from again, read each time, rather than from url as it was
// at Open: see OpenLazyFrom. A nil again is OpenAs.
func OpenFrom(ctx context.Context, url, app string, again URLSource) (*Store, error) {
	s, err := OpenLazyFrom(url, app, again)
	if err != nil {
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		var late *pingTimeoutError
		if ctx.Err() != nil || errors.As(err, &late) {
			// The connection given up is closed in the background: pgx
			// asks the server to cancel what it ran and waits for it to
			// close the connection, up to 15 seconds, which a server or
			// pooler that does not answer (PgBouncer paused) takes
			// whole; the caller, told it did not answer or stopping,
			// need not wait for that too.
			go s.Close()
		} else {
			s.Close()
		}
		return nil, err
	}
	return s, nil
}

// OpenLazy is Open without connecting: it reads url and makes the pool,
// whose first statement connects. It fails only on a url it cannot read
// (ErrBadURL), for a process that starts while its database does not
// answer yet, and calls Ping until it does.
func OpenLazy(url string) (*Store, error) { return OpenLazyAs(url, "") }

// MaxApplicationName is the longest application_name PostgreSQL keeps,
// in bytes: it cuts a longer one.
const MaxApplicationName = 63

// OpenLazyAs is OpenLazy whose sessions, the listener's included, carry
// application_name app where url names none, nor the environment
// (PGAPPNAME): a database administrator then tells them apart in
// pg_stat_activity and in the sessions that hold locks. app is cut to
// MaxApplicationName bytes; "" sets none.
func OpenLazyAs(url, app string) (*Store, error) { return OpenLazyFrom(url, app, nil) }

// OpenLazyFrom is OpenLazyAs whose every new connection (the pool's, the
// listener's, the one made beside a pool whose connections are all in
// use) takes the database's address and login (host, port, database,
// user, password, TLS settings and target_session_attrs) from the URL
// again gives then, rather than from url as it was at the start: a
// password rotated under a running process, in the file again reads, is
// used from the next connection on, while those open keep their session.
// pgbus's session settings and the pool's own (pool_max_conns, timeouts)
// stay url's. An error of again, or a URL it gives that cannot be read,
// fails that connection, saying so (Advice). A nil again is OpenLazyAs.
func OpenLazyFrom(url, app string, again URLSource) (*Store, error) {
	return openLazy(url, app, again, 0)
}

// openLazy is OpenLazyFrom whose pool holds up to maxConns connections
// when maxConns > 0, whatever url says.
func openLazy(url, app string, again URLSource, maxConns int32) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, urlError(url, err)
	}
	if strings.Contains(cfg.ConnConfig.Host, "@") {
		// An unescaped @ in the password makes the password's end part of
		// the host: it would be looked up, and quoted in errors.
		return nil, badURL{fmt.Errorf("store: the database URL's host holds an @: percent-encode an @ in the password as %%40 (and a : as %%3A, a / as %%2F)")}
	}
	ConfigurePool(cfg)
	if !setsParam(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns(runtime.GOMAXPROCS(0))
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
		cfg.MinConns = min(cfg.MinConns, maxConns)
	}
	if app != "" && cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = cutName(app)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 && !setsConnectTimeout(url) {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	socks := trackSockets(cfg)
	var r *reread
	if again != nil {
		r = newReread(url, cfg.ConnConfig, again)
	}
	fb := &stmtFallback{}
	cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		if r != nil {
			if err := r.apply(ctx, cc); err != nil {
				return err
			}
		}
		fb.apply(cc)
		return nil
	}
	// NewWithConfig makes its connections in the background (those of
	// pool_min_conns), so it waits for no server.
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open pool: %w", err)
	}
	s := New(pool)
	fb.pool = pool
	s.closing.fallback = fb
	s.sockets = socks
	s.reread = r
	s.opened = &openedWith{url: url, app: app, again: again}
	return s, nil
}

// stmtFallback makes the connections of a Store that Open made without
// named prepared statements (pgx's cache_describe mode) once one of its
// statements met the mark of a connection pooler in transaction mode that
// does not keep them (PgBouncer before 1.21, or without
// max_prepared_statements): a process started behind one without
// default_query_exec_mode in its URL failed one statement in many for as
// long as it ran, its workers' outcomes among them, so that jobs ran
// again. A URL that sets another mode than pgx's default keeps it.
type stmtFallback struct {
	on   atomic.Bool
	pool *pgxpool.Pool
}

// apply sets cc's mode, for a connection about to be made, once the
// fallback is on.
func (f *stmtFallback) apply(cc *pgx.ConnConfig) {
	if f.on.Load() && cc.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
}

// trip turns the fallback on, the first time closing the pool's
// connections (those in use once released), whose statement caches name
// statements the pooler does not keep; it reports whether f falls back,
// false for a nil f (a Store made by New over a pool of the caller's).
func (f *stmtFallback) trip() bool {
	if f == nil || f.pool == nil {
		return false
	}
	if f.on.CompareAndSwap(false, true) && f.pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		f.pool.Reset()
	}
	return f.pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
}

// DefaultMaxConns is how many connections the pool of a Store that Open
// made holds at most, for a process whose Go code runs on cpus CPUs
// (GOMAXPROCS, which follows a container's CPU limit), unless the URL sets
// pool_max_conns: as many as the CPUs, at least 4 and at most 10. pgx's own
// default, one a core of the host and at least 4, opened 64 connections a
// process on a 64-core host, which a few processes would take all of a
// server's max_connections with, while pgbus's statements are short: a
// worker's jobs wait on their handlers, not on the database. Besides the
// pool, a process opens a connection listening for sends (one running
// workers), one held by the process elected to send alerts, one for each
// bulk operation under way (its audit entry's), and one for a question of
// health while every connection of the pool is in use.
func DefaultMaxConns(cpus int) int32 { return int32(max(4, min(cpus, 10))) }

// cutName is app cut to MaxApplicationName bytes, on a character's
// boundary.
func cutName(app string) string {
	if len(app) <= MaxApplicationName {
		return app
	}
	n := MaxApplicationName
	for n > 0 && !utf8.RuneStart(app[n]) {
		n--
	}
	return app[:n]
}

// Ping checks that the server answers, connecting when the pool holds no
// connection, and says what to do when it does not: a server that cannot
// be reached or refuses this client (IsUnreachable tells the first). A
// bound ctx carries (WithStatementTimeout) bounds it, its connection
// included: a server, or a pooler in front of it (PgBouncer, paused or
// without a server connection to give), that takes the connection and
// does not answer holds it that long, not until the pooler gives up.
func (s *Store) Ping(ctx context.Context) error {
	if s.pool == nil {
		return errNoPool()
	}
	bound := statementTimeout(ctx)
	pingCtx, cancel := boundStatement(ctx)
	defer cancel()
	err := s.pool.Ping(pingCtx)
	for tries := 1; idleKilled(err) && tries < 3 && pingCtx.Err() == nil; tries++ {
		// The server ended the new session for sitting idle between its
		// start and the ping, on a busy machine under a short
		// idle_session_timeout: the ping never ran, so it runs on a new
		// connection, as a statement would.
		err = s.pool.Ping(pingCtx)
	}
	if poolGaveUp(err) {
		err = poolerHint(err, s.closing)
	}
	if err != nil && bound > 0 && ctx.Err() == nil && pingCtx.Err() != nil {
		err = &pingTimeoutError{bound: bound, err: err}
	}
	if err != nil {
		return &connectError{host: s.target().Host, err: err}
	}
	return nil
}

// pingTimeoutError is a ping given up at the bound its context carried.
type pingTimeoutError struct {
	bound time.Duration
	err   error
}

func (e *pingTimeoutError) Error() string {
	var connect *pgconn.ConnectError
	if errors.As(e.err, &connect) {
		return fmt.Sprintf("the server (or a connection pooler in front of it) did not finish the connection's login within %s: %v", e.bound, e.err)
	}
	return fmt.Sprintf("the server (or a connection pooler in front of it) accepted the connection but did not answer within %s: %v", e.bound, e.err)
}

func (e *pingTimeoutError) Unwrap() error { return e.err }

// connectError is a connection that failed, with what to do about it.
// pgx lists each attempt on a line of its own, and tries a server twice
// when the URL lets it choose TLS or not (sslmode=prefer, the default):
// the same line twice read as two failures, so a line repeating the one
// before it is left out.
type connectError struct {
	host string
	err  error
}

func (e *connectError) Error() string {
	lines := strings.Split(e.err.Error(), "\n")
	lines = slices.Compact(lines)
	return fmt.Sprintf("store: connect to %s: %s; %s", e.host, strings.Join(lines, "\n"), connectAdvice(e.err))
}

func (e *connectError) Unwrap() []error {
	if unavailable(e.err) {
		return []error{e.err, ErrUnavailable}
	}
	return []error{e.err}
}

// IsConnectFailure reports whether err is the failure of Open or Ping to
// connect: the server could not be reached (IsUnreachable), or it refused
// this client (a wrong password, a database that does not exist).
func IsConnectFailure(err error) bool {
	var c *connectError
	return errors.As(err, &c)
}

// ConfigurePool gives cfg, the configuration of a pool a program opens
// itself to pass to New (to share it with its own statements), what Open
// gives the pools it opens: a connection idle for more than 100ms is
// pinged before it is handed out, so that one a server restart closed is
// replaced rather than failing a worker's call; each session asks for
// the settings pgbus's statements are written for (DateStyle ISO,
// standard_conforming_strings on and client_encoding UTF8: see
// sessionSettings); and times are read in UTC, as the
// dead-letter block writes them. A ShouldPing or AfterConnect cfg already
// has is kept: a connection either asks to ping is pinged, and pgbus's
// AfterConnect runs first; a ping gets at most 5 seconds, unless cfg sets
// its own PingTimeout. Call it before pgxpool.NewWithConfig.
func ConfigurePool(cfg *pgxpool.Config) {
	if ownPing := cfg.ShouldPing; ownPing != nil {
		cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
			return shouldPing(ctx, p) || ownPing(ctx, p)
		}
	} else {
		cfg.ShouldPing = shouldPing
	}
	sessionSettings(cfg.ConnConfig.RuntimeParams)
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = pingTimeout
	}
	own := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if err := scanTimesInUTC(ctx, conn); err != nil {
			return err
		}
		if own != nil {
			if err := own(ctx, conn); err != nil {
				return err
			}
		}
		markMade(conn)
		return nil
	}
}

// pingTimeout bounds the ping of a connection idle for a while before it
// is handed out. Unbounded, a ping on a frozen path (a failover, a cut
// network) whose caller gave up went on for a minute, and closing the
// pool waited for it: a worker stopped while the database's path was
// frozen said it had stopped, then took half a minute more to exit.
const pingTimeout = 5 * time.Second

// sessionSettings asks the server, at the start of each session, for the
// settings pgbus's statements are written for, whatever the role, the
// database or the server's configuration sets:
//
//   - DateStyle ISO: the exec and simple_protocol modes of
//     default_query_exec_mode, which a pooler may need, read every result
//     as text, and pgx reads only that style; under SQL, German or
//     Postgres every read of a time would fail. The order of day and
//     month in times written to the server stays as set, since pgbus
//     writes the year first.
//   - standard_conforming_strings on: pgbus's regular expressions, in its
//     statements and in the SQL functions its triggers and indexes call
//     (parsed in the calling session), are written with backslashes that
//     would be read as escapes otherwise, and dead-lettering would fail.
//   - client_encoding UTF8, as Go's strings are: in a database of another
//     encoding the server converts what it can store, and refuses what it
//     cannot, rather than store UTF-8's bytes as characters of its own.
//
// PgBouncer tracks all three, so it passes them on to each server
// connection it hands out.
func sessionSettings(params map[string]string) {
	forced := map[string]string{"datestyle": "DateStyle", "standard_conforming_strings": "standard_conforming_strings", "client_encoding": "client_encoding"}
	for k := range params {
		if _, ok := forced[strings.ToLower(k)]; ok {
			delete(params, k)
		}
	}
	params["DateStyle"] = "ISO"
	params["standard_conforming_strings"] = "on"
	params["client_encoding"] = "UTF8"
}

// scanTimesInUTC makes conn return the times it reads in UTC, as the
// dead-letter block writes them and the front ends show them, rather than
// in the zone of the process: the same instant, but a result whose times
// came in two zones (the host's and the block's) would read as two.
func scanTimesInUTC(_ context.Context, conn *pgx.Conn) error {
	m := conn.TypeMap()
	utc := &pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}}
	m.RegisterType(utc)
	m.RegisterType(&pgtype.Type{Name: "_timestamptz", OID: pgtype.TimestamptzArrayOID, Codec: &pgtype.ArrayCodec{ElementType: utc}})
	return nil
}

// limitSetting names the setting behind lim, "" for a limit no setting of
// the role's sets.
func limitSetting(lim Limit) string {
	switch lim {
	case LimitStatementTimeout:
		return "statement_timeout"
	case LimitLockTimeout:
		return "lock_timeout"
	case LimitIdleInTransaction:
		return "idle_in_transaction_session_timeout"
	case LimitIdleTimeout:
		return "idle_session_timeout"
	}
	return ""
}

// connectAdvice says what to do about a connection that failed: a server
// that answered and refused says why, so the advice follows its reason;
// one that did not answer is down or elsewhere.
func connectAdvice(err error) string {
	if errors.As(err, new(*rereadError)) {
		return rereadAdvice
	}
	if errors.Is(err, pgconn.ErrReadOnlyConnection) {
		return "the servers of the database URL that answered take no writes (standbys, refused by its target_session_attrs=read-write): " +
			"the primary is down or a failover is under way; try again once a primary answers, or name the primary's host in the database URL"
	}
	if poolGaveUp(err) {
		return "try again once it answers"
	}
	var late *pingTimeoutError
	if errors.As(err, &late) {
		return "it is frozen or overloaded, or, behind PgBouncer, PgBouncer has no server connection to give (its pool full or paused, or PostgreSQL unreachable): try again shortly, and if it goes on " + UnansweredAdvice
	}
	if OutOfFiles(err) {
		return OutOfFilesAdvice
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		if strings.Contains(err.Error(), "server refused TLS connection") {
			return "the server offers no TLS, which the database URL's sslmode (require, verify-ca or verify-full) asks for: enable TLS on the server (ssl = on, with its certificate), or, on a network you trust, set sslmode=prefer or sslmode=disable in the database URL"
		}
		// A TLS request unanswered within connect_timeout is a server
		// that did not answer in time, told below, not a handshake that
		// failed.
		if strings.Contains(err.Error(), "tls error") && !cutAtTLS(err) && !pgconn.Timeout(err) {
			return "the TLS handshake with the server failed: check the server's certificate against the database URL's sslmode and sslrootcert (verify-ca and verify-full check it against the authorities sslrootcert names; verify-full also its host name)"
		}
		if pgconn.Timeout(err) {
			return "the server did not answer in time (connect_timeout in the database URL, 10 seconds by default): check that it is running and not overloaded, and that the database URL's host and port are right"
		}
		return "check that the server is running and the database URL's host and port are right"
	}
	switch {
	case pgErr.Code == "53300": // too_many_connections
		return "the server allows no more connections (for this role, this database or in all): lower the pool size of the processes that use it (pool_max_conns in the database URL, e.g. ?pool_max_conns=4), put PgBouncer in front of it, or raise the limit (max_connections, or the role's or database's CONNECTION LIMIT)"
	case pgErr.Code == "57P03": // cannot_connect_now
		return "the server is starting up, shutting down or recovering: try again once it is up"
	case pgErr.Code == "3D000": // invalid_catalog_name
		return "the database named in the database URL does not exist: create it (createdb NAME) or name one that does"
	case pgErr.Code == "57P05": // idle_session_timeout
		return "the server ended each new session for sitting idle before its first statement: its idle_session_timeout (for this role, this database or in all) is shorter than this machine takes to use a new connection; raise it to a second or more"
	case bouncerAdvice(err) != "":
		return bouncerAdvice(err)
	case strings.HasPrefix(pgErr.Code, "28"): // invalid_authorization_specification, invalid_password
		return "the server refused the role: check the user and password in the database URL, and that the server's pg_hba.conf lets this role connect from here"
	}
	if setting := limitSetting(LimitOf(err)); setting != "" {
		// The first statements of a connection (pgx's, pgbus's set-up),
		// cut by a limit set for the role or database.
		return fmt.Sprintf("the server ended the connection's first statements by its %s, set for the role or database, which is too short for any call: raise it for the role pgbus uses (ALTER ROLE <role> SET %s = ...), or set it to 0", setting, setting)
	}
	return "the server answered but refused the connection: check the database URL"
}

// cutAtTLS reports whether err, a connection's failure that went through
// its TLS request, says the connection was cut or refused (the server,
// or PgBouncer in front of it, killed or restarting) rather than that the
// handshake failed: a certificate says nothing of that.
func cutAtTLS(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// New wraps an existing pool. The caller keeps ownership of the pool's
// configuration: give it what Open gives its pools with ConfigurePool.
// Close closes the pool.
func New(pool *pgxpool.Pool) *Store {
	cl := &closing{ch: make(chan struct{})}
	return &Store{pool: pool, db: db{pool: pool, closing: cl}, reads: db{pool: pool, reads: true, closing: cl}, closing: cl, aside: make(chan struct{}, 1)}
}

// Pool returns the underlying pool, for its configuration and statistics and
// for tests; pgbus statements live in this package (see Listen for
// notifications).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// User is the role the store connects as, as its database URL names it
// ("" when the URL leaves it to the server's default).
func (s *Store) User() string { return s.target().User }

// errNoPool is the error of a call on a Store without a pool.
func errNoPool() error {
	return invalidf("the Store has no pool: it was made by store.New with a nil pool, or is a zero store.Store; open one with store.Open, or pass store.New the pool pgxpool.NewWithConfig returned")
}

// Close closes the pool, once the connections in use are released. A
// Store that Open or OpenLazy made ends at once the connections pgx gave
// up on, whose statements' calls ended (a call timeout, a stop) and which
// pgx would otherwise take up to 15 seconds to close when the server or a
// pooler in front of it does not answer (PgBouncer paused); the pool's
// idle connections are closed with their goodbye, and those in use are
// left to their callers.
func (s *Store) Close() {
	if s == nil || s.closing == nil {
		return // a zero Store, or a nil one, holds nothing to close
	}
	s.closing.byClose.Store(true)
	s.closing.close()
	if s.sockets != nil {
		s.sockets.close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
}

// Closed returns a channel closed once Close is called, or once a
// statement of the Store found its pool closed (the pool passed to New,
// closed by its owner), for what works with the Store in the background
// (engine.Client.Run) to stop rather than fail at every statement.
func (s *Store) Closed() <-chan struct{} {
	if s.closing == nil {
		return nil // a zero Store: never closed
	}
	return s.closing.ch
}

// PoolClosedOutside reports whether the Store's pool was found closed
// while Close was never called: the owner of the pool passed to New
// closed it.
func (s *Store) PoolClosedOutside() bool {
	if s.closing == nil {
		return false
	}
	select {
	case <-s.closing.ch:
		return !s.closing.byClose.Load()
	default:
		return false
	}
}

// closing is the end of a Store: Close, or its pool closed by its owner,
// which a statement finds (poolerHint).
type closing struct {
	once    sync.Once
	ch      chan struct{}
	byClose atomic.Bool // Close was called
	// fallback is the Store's, set by Open: its statements' errors
	// (poolerHint) trip it.
	fallback *stmtFallback
}

func (c *closing) close() { c.once.Do(func() { close(c.ch) }) }

// HasConnected reports whether the Store's pool ever made a connection:
// whether the database took its login once. A login refused after one was
// taken is a password rotated, or the role shut out, under a running
// process, rather than a wrong password.
func (s *Store) HasConnected() bool {
	if s.pool == nil {
		return false
	}
	// NewConnsCount counts attempts; a connection acquired, or idle in
	// the pool, was a login taken.
	st := s.pool.Stat()
	return st.AcquireCount() > 0 || st.IdleConns() > 0
}

// DropConnections closes the pool's idle connections now, and those in
// use as they are released, so that the statements after it connect
// afresh; the pool stays open. Call it when a statement got no answer
// within its deadline: the path that froze it (a failover behind a load
// balancer or proxy, a cut network path, a frozen PgBouncer) froze every
// connection on it at once, and the pool, which drops only a connection
// whose statement failed, would hand out each of the others in turn, each
// costing one more deadline.
//
// Statements running are not cut short: on a pool shared with other code,
// its transactions finish (or fail, on a frozen connection, as they would
// have), and its next statements pay one new connection each. Behind
// PgBouncer the connections dropped are PgBouncer's client connections,
// cheap to make again. A Listener's connection is its own, and stays.
func (s *Store) DropConnections() {
	if s.pool != nil {
		s.pool.Reset()
	}
}

// RefusedMessage returns the index in msgs of the first message whose
// payload or headers PostgreSQL refuses to take as jsonb (a number beyond
// what jsonb holds), or -1 when it takes them all or could not be asked.
// A batch is sent in one statement, whose failure on such a value does
// not say which message held it: a caller whose batch failed so asks
// here, after the fact, to name the message. It casts each message alone,
// in one round trip that writes nothing, on the pool when it has a
// connection free, else on a connection made beside it: a caller whose
// batch failed in its own transaction, aborted now, may hold the pool's
// last connection until it rolls back.
func (s *Store) RefusedMessage(ctx context.Context, msgs []NewMessage) int {
	if s.pool == nil {
		return -1
	}
	b := &pgx.Batch{}
	for _, m := range msgs {
		var h *string
		if len(m.Headers) > 0 {
			str := jsonbText(m.Headers)
			h = &str
		}
		b.Queue(`SELECT $1::text::jsonb IS NULL, $2::text::jsonb IS NULL`, jsonbText(m.Payload), h)
	}
	refused := -1
	_ = s.diagnose(ctx, "name the message PostgreSQL refuses", func(q querier) error {
		var br pgx.BatchResults
		if conn, ok := q.(interface {
			SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
		}); ok {
			br = conn.SendBatch(ctx, b)
		} else {
			br = s.pool.SendBatch(ctx, b)
		}
		defer br.Close()
		refused = refusedIn(br, len(msgs))
		return nil
	})
	return refused
}

// refusedIn is RefusedMessage's answer from the results of its n casts.
func refusedIn(br pgx.BatchResults, n int) int {
	for i := range n {
		if _, err := br.Exec(); err != nil {
			// Only the server's refusal of this message's value names it
			// (a data exception, or a value past a limit of jsonb): a lost
			// connection or a statement cut short says nothing of any
			// message, and the statements after it are skipped.
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || pgErr.Code == "54000") {
				return i
			}
			return -1
		}
	}
	return -1
}
