package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// pingIdleAfter is how long a pooled connection may sit idle before the pool
// pings it on acquire. pgx's default is a second, which hands out the dead
// connections of a server restarted within a second of their last use.
// Connections in back-to-back use skip the ping; a statement that still
// meets a dead one is retried (see db).
const pingIdleAfter = 100 * time.Millisecond

type forcePingKey struct{}

// withForcedPing marks ctx so that a pool opened by Open pings whatever
// connection it hands out: a retry must not get another dead connection.
func withForcedPing(ctx context.Context) context.Context {
	return context.WithValue(ctx, forcePingKey{}, true)
}

// shouldPing is the pool's ShouldPing: connections that were idle a while, or
// any when the caller retries after a connection error, are pinged first and
// destroyed (the pool takes another) when the ping fails. A connection
// handed out for the first time within pingIdleAfter of its login is not:
// its login just answered, and no restart can have closed it since. Behind
// a pooler that takes logins while PostgreSQL is down (PgBouncer), pinging
// it too failed every connection the pool made, and the pool gave up with
// an error of its own that blamed a bug and said nothing of the server;
// handed out, the statement meets the pooler's own error, which says why.
func shouldPing(ctx context.Context, p pgxpool.ShouldPingParams) bool {
	if p.Conn != nil {
		data := p.Conn.PgConn().CustomData()
		if made, ok := data[madeKey].(time.Time); ok {
			delete(data, madeKey)
			if time.Since(made) < pingIdleAfter {
				return false
			}
		}
	}
	forced, _ := ctx.Value(forcePingKey{}).(bool)
	return forced || p.IdleDuration >= pingIdleAfter
}

// madeKey is the key, in a new connection's CustomData, of when its login
// ended, until the pool first hands it out (shouldPing).
const madeKey = "pgbus.made"

// markMade notes on conn when its login ended, for shouldPing.
func markMade(conn *pgx.Conn) {
	if data := conn.PgConn().CustomData(); data != nil {
		data[madeKey] = time.Now()
	}
}

// poolGaveUpText is the text of pgxpool's error when every connection it
// tried to hand out failed its check (ShouldPing's ping), up to one more
// than its size: it blames a bug of the hooks, though a server (or a
// pooler in front of it) that takes logins and fails every statement
// does it.
const poolGaveUpText = "pgxpool: too many failed attempts acquiring connection"

// poolGaveUpError is pgxpool's giving up of poolGaveUpText, said as what
// it means: connections were made, and each failed when checked.
type poolGaveUpError struct{ err error }

func (e poolGaveUpError) Error() string {
	return "every connection the pool made or held failed when checked before use: the server, or a connection pooler such as PgBouncer in front of it, takes connections but does not answer on them; " +
		"behind PgBouncer, PgBouncer cannot reach PostgreSQL (check that PostgreSQL is up and that PgBouncer's address and credentials for it are right)"
}

func (e poolGaveUpError) Unwrap() error { return e.err }

// poolGaveUp reports whether err is pgxpool's giving up of poolGaveUpText.
func poolGaveUp(err error) bool {
	var p poolGaveUpError
	return errors.As(err, &p) || err != nil && strings.Contains(err.Error(), poolGaveUpText)
}

// Advice returns the advice the text of err, an error of the store,
// ends with when the store recognized why the database could not be
// reached or used: a connection that failed (Ping's, or one the pool made
// for a statement that the server refused, Refused), a connection
// pooler (PgBouncer) that cannot reach PostgreSQL or has no server
// connection to give, a pool whose every connection failed its check, a
// process with no file descriptor left to open a connection (OutOfFiles). It
// names no host, user or database, unlike err, for a caller that may not
// show err (a probe served without a token); "" when the store gave none.
func Advice(err error) string {
	var ce *connectError
	switch {
	case OutOfFiles(err):
		// No connection was asked of the server, whoever tried to open it.
		return OutOfFilesAdvice
	case errors.As(err, &ce):
		return connectAdvice(ce.err)
	case Refused(err):
		// A connection the pool made after Open, for a statement.
		return connectAdvice(err)
	case errors.As(err, new(*rereadError)):
		// A connection the pool did not make, for a statement.
		return rereadAdvice
	case bouncerAdvice(err) != "":
		return bouncerAdvice(err)
	case poolGaveUp(err):
		return poolGaveUpError{}.Error()
	}
	return ""
}

// UnansweredAdvice is what to check about a database that gave no answer
// in time: PostgreSQL itself, and a connection pooler in front of it
// (PgBouncer) that holds statements unanswered while it is paused or has no
// server connection to give.
const UnansweredAdvice = "check that PostgreSQL is up and answers; behind PgBouncer, check on its admin console that the database is not paused (RESUME <database> ends a PAUSE) " +
	"and that clients do not wait for a server connection (SHOW POOLS: cl_waiting), and its log for failed connections to PostgreSQL"

// UnansweredCauses are the causes of a database that does not answer, in
// words a log line that says so puts in brackets.
const UnansweredCauses = "it is down or restarting, the connection to it was cut or stopped answering, " +
	"or a connection pooler in front of it (PgBouncer) is paused or has no server connection to give"

// DatabaseAdvice says what to check about err, the error of a call on a
// database that could not be reached or used: Advice when the store
// recognized why, else UnansweredAdvice for a call that got no answer in
// time (context.DeadlineExceeded), else "". Like Advice, it names no host,
// user or database.
func DatabaseAdvice(err error) string {
	if advice := Advice(err); advice != "" {
		return advice
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return UnansweredAdvice
	}
	return ""
}

// Refused reports whether err holds a connection the server (or a
// connection pooler in front of it) answered and refused at its login,
// with an error of its own: a password that changed (SQLSTATE 28P01), a
// role it no longer lets in (28000), no connection left to give (53300),
// a database that does not exist (3D000). It tells these, whether Open
// or a statement's new connection met them later, from a server that did
// not answer at all, which no check of the login settings mends.
func Refused(err error) bool {
	var connect *pgconn.ConnectError
	var pgErr *pgconn.PgError
	return errors.As(err, &connect) && errors.As(connect, &pgErr)
}

// bouncerAdvice says what a FATAL error of PgBouncer's that it sends when
// it has no server connection to give (PostgreSQL down, or every server
// connection of the pool in use) means, "" for any other error. PgBouncer
// sends them all as SQLSTATE 08P01, protocol_violation.
func bouncerAdvice(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "08P01" {
		return ""
	}
	switch msg := pgErr.Message; {
	case strings.Contains(msg, "server login has been failing"):
		// PgBouncer's server_login_retry: its own login to PostgreSQL
		// failed (a restart under way), and it refuses clients a while.
		return "the connection pooler (PgBouncer) cannot reach PostgreSQL: its login to it failed lately, and it refuses connections for a few seconds (server_login_retry); try again shortly, and if it goes on, check that PostgreSQL is up and that the pooler's credentials for it are right"
	case strings.Contains(msg, "query_wait_timeout"):
		return "the connection pooler (PgBouncer) had no server connection to give within its query_wait_timeout: its pool for this database is full (raise default_pool_size, or find what holds its connections), paused, or PostgreSQL does not answer it; try again shortly, and if it goes on check PostgreSQL and PgBouncer's SHOW POOLS"
	case statementPooled(pgErr):
		return StatementPoolerAdvice
	case strings.Contains(msg, "pgbouncer cannot connect to server"), strings.Contains(msg, "server conn crashed"), strings.Contains(msg, "server_connect_timeout"):
		return "the connection pooler (PgBouncer) cannot reach PostgreSQL: check that PostgreSQL is up and that PgBouncer's address and credentials for it are right"
	}
	return ""
}

// StatementPoolerAdvice says what to do about a connection pooler in
// statement mode, which refuses every transaction of more than one
// statement, and so most of what pgbus does.
const StatementPoolerAdvice = "the connection pooler (PgBouncer) is in statement mode (pool_mode = statement), which refuses transactions of more than one statement, and pgbus reads and writes in such transactions: " +
	"point the database URL at a pool in transaction mode (pool_mode = transaction, with default_query_exec_mode=cache_describe in the URL) or session mode, or at PostgreSQL directly"

// statementPooled reports whether pgErr is PgBouncer refusing a
// transaction in statement mode. PgBouncer says so with the protocol
// violation code it gives many errors, 08P01, and in English only, so
// its words tell it apart. It ends the client's connection, but unlike
// a connection lost it is no outage: the same statements fail alike on
// every connection, so they are not run again.
func statementPooled(pgErr *pgconn.PgError) bool {
	return pgErr.Code == "08P01" && (strings.Contains(pgErr.Message, "statement pooling mode") || strings.Contains(pgErr.Message, "transactions not allowed"))
}

// db runs statements on the pool and runs one again (up to maxReruns
// times), on a connection the pool has checked, when its connection turns
// out dead: always when pgx says
// the statement was never sent (pgconn.SafeToRetry) or the server had ended
// the session for sitting idle (idle_session_timeout) before it, so writes
// are never run twice; and, if reads is set, on any connection error, for
// statements that only read.
type db struct {
	pool  *pgxpool.Pool
	reads bool
	// closing is the Store's, closed by the first statement that finds
	// the pool closed.
	closing *closing
}

// maxReruns is how many times a statement is run again on another
// connection when its connection turns out dead. Once is mostly enough,
// but a fresh connection can itself meet the server's idle_session_timeout
// before the statement reaches it, when the client stalls longer than the
// timeout; a few more cost nothing, since the statement never ran.
const maxReruns = 3

// retry reports whether err, from a statement run under ctx, should be run
// again on another connection.
func (d db) retry(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if neverRan(err) {
		return true
	}
	return d.reads && connLost(err)
}

// neverRan reports whether err says the statement never ran: pgx did not
// send it, or the server had ended the session for sitting idle. Running
// it again on another connection runs it once.
func neverRan(err error) bool {
	return pgconn.SafeToRetry(err) || idleKilled(err)
}

// idleKilled reports whether err says the server ended the session for
// sitting idle (idle_session_timeout, SQLSTATE 57P05) before the statement
// that met it: the statement never ran.
func idleKilled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57P05"
}

// connLost reports whether err says the connection broke (as opposed to the
// statement failing): the server went away, or told us it is shutting down.
// pgx says "conn closed" (pgconn.ErrConnClosed) for a statement whose
// connection broke while it ran (a pooler in front of the server killed or
// restarted), and for each statement of a transaction on it after.
func connLost(err error) bool {
	if pgconn.Timeout(err) {
		return false // a context deadline, not a dead server
	}
	if errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case statementPooled(pgErr):
			return false
		case pgErr.Code == "57P01", pgErr.Code == "57P02": // admin_shutdown, crash_shutdown
			return true
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection_exception
			return true
		}
		return false
	}
	var netErr net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.As(err, &netErr)
}

// poolerHint adds what to do to an error saying that a named prepared
// statement of pgx's statement cache is missing or already there: the mark
// of a connection pooler in transaction mode (PgBouncer before 1.21, or
// without max_prepared_statements) between pgbus and PostgreSQL, which
// hands each transaction whichever server connection is free. It does so
// too for the pool's "closed pool", which says nothing of the Store or of
// what to do: closed by Store.Close, or by the owner of the pool passed to
// New, as cl, the Store's, says (nil: by Close); found so, it ends cl.
func poolerHint(err error, cl *closing) error {
	return markUnavailable(hint(err, cl))
}

func hint(err error, cl *closing) error {
	if err == nil {
		return nil
	}
	if poolGaveUp(err) {
		var p poolGaveUpError
		if errors.As(err, &p) {
			return err
		}
		return poolGaveUpError{err}
	}
	if advice := bouncerAdvice(err); advice != "" && !strings.Contains(err.Error(), "(PgBouncer)") { // said once
		return fmt.Errorf("%w; %s", err, advice)
	}
	if errors.Is(err, puddle.ErrClosedPool) && !errors.As(err, new(closedError)) { // said once
		byClose := cl == nil || cl.byClose.Load()
		if cl != nil {
			cl.close() // the Store ends with its pool
		}
		return closedError{err: err, byClose: byClose}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P05" || pgErr.Code == "26000") && strings.Contains(pgErr.Message, "stmtcache_") &&
		!strings.Contains(err.Error(), "max_prepared_statements") { // said once
		var fb *stmtFallback
		if cl != nil {
			fb = cl.fallback
		}
		if fb.trip() {
			return fmt.Errorf("%w; a connection pooler in transaction mode (PgBouncer) between pgbus and PostgreSQL does not keep prepared statements: "+
				"this process makes its connections without them from now on; add default_query_exec_mode=cache_describe to the database URL, "+
				"or on PgBouncer 1.21+ set max_prepared_statements, so that it starts so", err)
		}
		return fmt.Errorf("%w; a connection pooler in transaction mode (PgBouncer) between pgbus and PostgreSQL does not keep prepared statements: "+
			"add default_query_exec_mode=cache_describe to the database URL, or on PgBouncer 1.21+ set max_prepared_statements", err)
	}
	return err
}

// closedError is a statement's error on a closed pool, which is ErrClosed:
// closed by Store.Close (byClose), or by the owner of the pool passed to
// New.
type closedError struct {
	err     error
	byClose bool
}

func (e closedError) Error() string {
	if !e.byClose {
		return e.err.Error() + ": the pool this Store wraps was closed (pgxpool.Pool.Close) while the Store was in use: close the pool only once nothing uses the Store (after Run returns), or close it with Store.Close"
	}
	return e.err.Error() + ": this Store was closed (Store.Close): open one with store.Open, and close it only once nothing uses it (after Run returns)"
}

func (e closedError) Unwrap() []error { return []error{e.err, ErrClosed} }

func (d db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if d.pool == nil {
		return pgconn.CommandTag{}, errNoPool()
	}
	if lockBound(ctx) > 0 {
		var tag pgconn.CommandTag
		err := d.lockBounded(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
			tag, err = tx.Exec(ctx, sql, args...)
			return err
		})
		return tag, err
	}
	ctx, cancel := boundStatement(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, sql, args...)
	for try := 0; try < maxReruns && d.retry(ctx, err); try++ {
		tag, err = d.pool.Exec(withForcedPing(ctx), sql, args...)
	}
	for try := 1; conflicted(ctx, err, try); try++ {
		tag, err = d.pool.Exec(ctx, sql, args...)
	}
	return tag, poolerHint(err, d.closing)
}

// Query retries when the first attempt fails before it yields a row: at
// Query itself, or at the first Next (pgx reports a failed send of a cached
// statement there).
func (d db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if d.pool == nil {
		return nil, errNoPool()
	}
	if lockBound(ctx) > 0 {
		return d.lockBoundedQuery(ctx, sql, args...)
	}
	if statementTimeout(ctx) == 0 {
		return d.query(ctx, sql, args...)
	}
	ctx, cancel := boundStatement(ctx)
	rows, err := d.query(ctx, sql, args...)
	if err != nil {
		cancel()
		return rows, err
	}
	return cancelOnClose{Rows: rows, cancel: cancel}, nil
}

func (d db) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := d.pool.Query(ctx, sql, args...)
	if d.retry(ctx, err) {
		for try := 0; try < maxReruns && d.retry(ctx, err); try++ {
			rows, err = d.pool.Query(withForcedPing(ctx), sql, args...)
		}
		return rows, poolerHint(err, d.closing)
	}
	for try := 1; conflicted(ctx, err, try); try++ {
		rows, err = d.pool.Query(ctx, sql, args...)
	}
	if err != nil {
		return rows, poolerHint(err, d.closing)
	}
	return &retryRows{Rows: rows, d: d, ctx: ctx, sql: sql, args: args}, nil
}

func (d db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if d.pool == nil {
		return errRow{errNoPool()}
	}
	if lockBound(ctx) > 0 {
		return lockBoundedRow{d: d, ctx: ctx, sql: sql, args: args}
	}
	if statementTimeout(ctx) == 0 {
		return retryRow{d: d, ctx: ctx, sql: sql, args: args, row: d.pool.QueryRow(ctx, sql, args...)}
	}
	ctx, cancel := boundStatement(ctx)
	row := retryRow{d: d, ctx: ctx, sql: sql, args: args, row: d.pool.QueryRow(ctx, sql, args...)}
	return cancelAfterScan{row: row, cancel: cancel}
}

// errRow is a row whose statement could not run.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// Begin begins a transaction at READ COMMITTED, whatever isolation the
// role or database sets by default (default_transaction_isolation): the
// statements of pgbus take row locks for what they must not share, and
// under REPEATABLE READ or SERIALIZABLE concurrent workers would have
// their transactions rolled back again and again (SQLSTATE 40001).
func (d db) Begin(ctx context.Context) (pgx.Tx, error) {
	return d.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx retries only a BEGIN that never ran: nothing ran yet.
func (d db) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	if d.pool == nil {
		return nil, errNoPool()
	}
	if opts.IsoLevel == "" && opts.BeginQuery == "" {
		opts.IsoLevel = pgx.ReadCommitted
	}
	if bound := lockBound(ctx); bound > 0 {
		opts.BeginQuery = lockBoundBegin(opts, bound)
	}
	begin, cancel := boundStatement(ctx)
	defer cancel()
	tx, err := d.pool.BeginTx(begin, opts)
	for try := 0; try < maxReruns && err != nil && begin.Err() == nil && neverRan(err); try++ {
		tx, err = d.pool.BeginTx(withForcedPing(begin), opts)
	}
	if err != nil || statementTimeout(ctx) == 0 {
		return tx, poolerHint(err, d.closing)
	}
	return boundedTx{Tx: tx}, nil
}

// lockBounded runs fn, one statement, in a transaction of its own begun
// under ctx's lock bound (WithLockWait), and commits it: run again on
// another connection, and after a conflict, as the statement alone would
// be (retry, conflicted).
func (d db) lockBounded(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	err := d.lockBoundedOnce(ctx, fn)
	for try := 0; try < maxReruns && d.retry(ctx, err); try++ {
		err = d.lockBoundedOnce(withForcedPing(ctx), fn)
	}
	for try := 1; conflicted(ctx, err, try); try++ {
		err = d.lockBoundedOnce(ctx, fn)
	}
	return poolerHint(err, d.closing)
}

func (d db) lockBoundedOnce(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	tx, err := d.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	if err := fn(ctx, tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// lockBoundedQuery is Query under ctx's lock bound: the rows are read in a
// transaction of their own, committed once they are all read or closed.
func (d db) lockBoundedQuery(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	var tx pgx.Tx
	var rows pgx.Rows
	begin := func(ctx context.Context) (err error) {
		if tx, err = d.BeginTx(ctx, pgx.TxOptions{}); err != nil {
			return err
		}
		if rows, err = tx.Query(ctx, sql, args...); err != nil {
			_ = tx.Rollback(ctx)
		}
		return err
	}
	err := begin(ctx)
	for try := 0; try < maxReruns && d.retry(ctx, err); try++ {
		err = begin(withForcedPing(ctx))
	}
	if err != nil {
		return nil, poolerHint(err, d.closing)
	}
	return &txRows{Rows: rows, tx: tx, ctx: ctx, closing: d.closing}, nil
}

// txRows are the rows of a statement run in a transaction of its own,
// which ends when the rows do: committed once they are all read without
// an error (its error then the rows' Err), rolled back otherwise.
type txRows struct {
	pgx.Rows
	tx      pgx.Tx
	ctx     context.Context
	closing *closing
	done    bool
	err     error // the commit's
}

func (r *txRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *txRows) Close() { r.finish() }

func (r *txRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return poolerHint(err, r.closing)
	}
	return r.err
}

func (r *txRows) finish() {
	if r.done {
		return
	}
	r.done = true
	r.Rows.Close()
	if r.Rows.Err() != nil {
		_ = r.tx.Rollback(r.ctx)
		return
	}
	r.err = poolerHint(r.tx.Commit(r.ctx), r.closing)
}

// lockBoundedRow is QueryRow under a lock bound: Scan runs the statement
// in a transaction of its own (lockBounded).
type lockBoundedRow struct {
	d    db
	ctx  context.Context
	sql  string
	args []any
}

func (r lockBoundedRow) Scan(dest ...any) error {
	return r.d.lockBounded(r.ctx, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, r.sql, r.args...).Scan(dest...)
	})
}

type retryRow struct {
	d    db
	ctx  context.Context
	sql  string
	args []any
	row  pgx.Row
}

func (r retryRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	for try := 0; try < maxReruns && r.d.retry(r.ctx, err); try++ {
		err = r.d.pool.QueryRow(withForcedPing(r.ctx), r.sql, r.args...).Scan(dest...)
	}
	for try := 1; conflicted(r.ctx, err, try); try++ {
		err = r.d.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	}
	return poolerHint(err, r.d.closing)
}

// Err is the rows' error, with poolerHint's advice where it applies.
func (r *retryRows) Err() error { return poolerHint(r.Rows.Err(), r.d.closing) }

type retryRows struct {
	pgx.Rows
	d       db
	ctx     context.Context
	sql     string
	args    []any
	started bool
}

func (r *retryRows) Next() bool {
	if r.started {
		return r.Rows.Next()
	}
	r.started = true
	if r.Rows.Next() {
		return true
	}
	for try := 0; try < maxReruns && r.d.retry(r.ctx, r.Rows.Err()); try++ {
		r.again(withForcedPing(r.ctx))
		if r.Rows.Next() {
			return true
		}
	}
	for try := 1; conflicted(r.ctx, r.Rows.Err(), try); try++ {
		r.again(r.ctx)
		if r.Rows.Next() {
			return true
		}
	}
	return false
}

// again runs the query anew, in place of the rows that failed.
func (r *retryRows) again(ctx context.Context) {
	r.Rows.Close()
	rows, err := r.d.pool.Query(ctx, r.sql, r.args...)
	if err != nil {
		rows.Close()
	}
	r.Rows = rows
}

// IsUnreachable reports whether err says the server could not be reached
// or is not taking connections yet (starting up, shutting down,
// restarting), as opposed to refusing this client (a wrong password, a
// missing database): the first may pass by waiting, the second not.
func IsUnreachable(err error) bool {
	if errors.Is(err, ErrBadURL) {
		// A file the URL names that cannot be read (sslrootcert's, ENOENT)
		// is no server that does not answer.
		return false
	}
	if errors.As(err, new(*fs.PathError)) {
		// Nor is a file or directory that cannot be made or read, such
		// as the embedded server's data directory on a read-only file
		// system: its error number reads as a network error's.
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57P03" { // cannot_connect_now
		return true
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) && pgconn.Timeout(err) {
		return true // no answer within the connect timeout
	}
	if poolGaveUp(err) {
		return true // every connection failed its check: see poolGaveUpError
	}
	var late *pingTimeoutError
	if errors.As(err, &late) {
		return true // taken, and not answered within the caller's bound
	}
	return connLost(err)
}

// IsCut reports whether err says that the connection of a statement, or of
// a wait for notifications, broke without a word from the server: it read
// the end of the stream (EOF) or was reset, as when the server, or a
// connection pooler in front of it (PgBouncer), is killed or restarted, or
// a network path drops it. A server that ended the session said so, with
// an error of its own (SQLSTATE 57P01), and a call given up at its
// deadline did not see the connection break: neither is a cut.
func IsCut(err error) bool {
	if err == nil || pgconn.Timeout(err) || errors.As(err, new(*pgconn.PgError)) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, pgconn.ErrConnClosed)
}

// EndedByAdministrator reports whether err is the server ending the
// session of the statement (SQLSTATE 57P01, admin_shutdown): an
// administrator's pg_terminate_backend, or a shutdown in fast mode, which
// ends every session alike. Unlike a database that does not answer, the
// former passes at once: a new session works.
func EndedByAdministrator(err error) bool {
	code, _ := SQLState(err)
	return code == "57P01"
}

// OutOfFiles reports whether err is this process failing to open a
// connection for want of a file descriptor: its own limit of open files
// reached (EMFILE, ulimit -n), or the system's (ENFILE). The database was
// never asked: what cures it is on this machine, and it passes as the
// process closes files, as a crowded server passes as other clients let
// their connections go.
func OutOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// OutOfFilesAdvice says what to do about a process that has no file
// descriptor left to open a connection with.
const OutOfFilesAdvice = "this process has no file descriptor left to open a connection to the database with (too many open files), so the database was not asked: raise the process's limit of open files (ulimit -n, LimitNOFILE= in a systemd unit, the container's nofile limit), or have it hold fewer at once (lower concurrency, fewer clients of its HTTP server)"

// IsCrowded reports whether err is the server refusing a connection
// because it has as many as it allows (SQLSTATE 53300: max_connections,
// or a role's or database's CONNECTION LIMIT). Like a server that does not
// answer, it may pass by waiting, as other clients let theirs go; unlike
// it, what cures it for good is fewer connections or a higher limit.
func IsCrowded(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "53300"
}

// CrowdedAdvice says what to do about a server that has as many
// connections as it allows, naming the settings that decide it.
const CrowdedAdvice = "raise the server's max_connections (or the role's or database's CONNECTION LIMIT), lower the pool size of the processes that use it (pool_max_conns in the database URL, e.g. ?pool_max_conns=4), or put PgBouncer in front of it"

// unavailable reports whether err says that the database is unavailable
// (ErrUnavailable): it does not answer (IsUnreachable) or takes no more
// connections (IsCrowded). The deadline of a caller's context passed, or
// the context cancelled, while a statement ran is the caller's, though
// the driver makes of it a connection cut (a net.Error); one passed while
// a connection was being made, or a ping given up at its bound, is a
// database that did not answer.
func unavailable(err error) bool {
	if err == nil {
		return false
	}
	var late *pingTimeoutError
	if errors.As(err, &late) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && !NeverSent(err) {
		return false
	}
	return IsCrowded(err) || IsUnreachable(err)
}

// markUnavailable makes err, when it says the database is unavailable
// (unavailable), wrap ErrUnavailable, its text as it was.
func markUnavailable(err error) error {
	if !unavailable(err) || errors.Is(err, ErrUnavailable) {
		return err
	}
	return unavailableError{err}
}

type unavailableError struct{ err error }

func (e unavailableError) Error() string   { return e.err.Error() }
func (e unavailableError) Unwrap() []error { return []error{e.err, ErrUnavailable} }

// NeverSent reports whether err, from a call that failed, came before any
// statement of it reached the server: no connection could be made, or the
// statement was never sent. Such a call wrote nothing; one whose
// connection broke later may have written, its commit sent but unanswered.
func NeverSent(err error) bool {
	var connect *pgconn.ConnectError
	return errors.As(err, &connect) || pgconn.SafeToRetry(err)
}

// OutcomeUnknown reports whether err, from a write that failed, leaves
// unknown whether it committed: its connection broke, or its call gave up
// on it or was cancelled, after the statement was sent, so that its
// commit may have come with no answer back. A statement the server
// answered with an error (a session it ended while the statement waited
// included) was rolled back: its outcome is known.
func OutcomeUnknown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false
	}
	return (IsUnreachable(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) && !NeverSent(err)
}
