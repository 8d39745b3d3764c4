package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// setLockTimeout bounds every lock wait of tx's later statements by d
// (SET LOCAL lock_timeout): a statement that waits longer fails with
// SQLSTATE 55P03 (isLockTimeout). The setting ends with the transaction, so
// nothing stays on a connection a pooler hands on.
func setLockTimeout(ctx context.Context, tx pgx.Tx, d time.Duration) error {
	ms := max(d.Milliseconds(), 1) // 0 would turn the bound off
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", ms)); err != nil {
		return fmt.Errorf("store: set lock_timeout: %w", err)
	}
	return nil
}

// isLockTimeout reports whether err is, or wraps, PostgreSQL's
// lock_not_available (SQLSTATE 55P03), which a statement fails with when
// it waited lock_timeout for a lock.
func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// lockWait is a backend waiting for a lock, as pg_locks and
// pg_blocking_pids saw it.
type lockWait struct {
	on       string // "a lock on pgbus.workers", "the migration lock", "a transactionid lock"
	mode     string // the mode waited for, e.g. AccessExclusiveLock
	migLock  bool   // the migration lock (migrationLockKey)
	blockers []blocker
}

// blocker is a backend that a lock wait waits for: one holding the lock,
// or one queued ahead for it.
type blocker struct {
	pid                   int
	holds                 bool // holds the lock, rather than waits ahead for it
	user, app, client     string
	state                 string // pg_stat_activity's, e.g. "idle in transaction"; "" when not visible
	xactStart, queryStart *time.Time
}

// watchLocks starts watching backend pid (pg_backend_pid, not pgx's
// PID, which a pooler makes up) from another connection of the pool, at
// once and then every interval: whatever it waits for and who it waits
// for. stop ends the watch and returns the last wait seen, or nil; it lets
// a look under way finish (each is bounded by four intervals), so call it
// once the watched transaction ended, not while it holds locks. A pool with no
// free connection for the watch, or a backend that waits for nothing,
// yields nil.
func (s *Store) watchLocks(ctx context.Context, pid int, every time.Duration) (stop func() *lockWait) {
	acquireCtx, cancelAcquire := context.WithCancel(ctx)
	stopped, done := make(chan struct{}), make(chan struct{})
	var last *lockWait
	go func() {
		defer close(done)
		conn, err := s.pool.Acquire(acquireCtx)
		if err != nil {
			return
		}
		defer conn.Release()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			look, cancel := context.WithTimeout(ctx, 4*every)
			w, err := lockWaitOf(look, conn, pid)
			cancel()
			switch {
			case err == nil && w != nil:
				last = w
			case err != nil && conn.Conn().IsClosed():
				return
			}
			select {
			case <-stopped:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() *lockWait {
		cancelAcquire()
		close(stopped)
		<-done
		return last
	}
}

// lockWaitOf returns what backend pid waits for and who holds it up, or
// nil when it waits for no lock.
func lockWaitOf(ctx context.Context, conn *pgxpool.Conn, pid int) (*lockWait, error) {
	rows, err := conn.Query(ctx, `
		SELECT w.locktype, w.mode,
		       (SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname)
		        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = w.relation),
		       w.locktype = 'advisory' AND (w.classid::int8 << 32 | w.objid::int8) = $2,
		       bp.pid,
		       EXISTS (SELECT 1 FROM pg_locks h WHERE h.pid = bp.pid AND h.granted
		               AND h.locktype = w.locktype
		               AND h.database IS NOT DISTINCT FROM w.database AND h.relation IS NOT DISTINCT FROM w.relation
		               AND h.page IS NOT DISTINCT FROM w.page AND h.tuple IS NOT DISTINCT FROM w.tuple
		               AND h.virtualxid IS NOT DISTINCT FROM w.virtualxid
		               AND h.transactionid IS NOT DISTINCT FROM w.transactionid
		               AND h.classid IS NOT DISTINCT FROM w.classid AND h.objid IS NOT DISTINCT FROM w.objid
		               AND h.objsubid IS NOT DISTINCT FROM w.objsubid) AS holds,
		       coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''),
		       coalesce(a.state, ''), a.xact_start, a.query_start
		FROM pg_locks w
		CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid)
		LEFT JOIN pg_stat_activity a ON a.pid = bp.pid
		WHERE w.pid = $1 AND NOT w.granted
		ORDER BY holds DESC, bp.pid
		LIMIT 10`, pid, migrationLockKey)
	if err != nil {
		return nil, err
	}
	var w *lockWait
	for rows.Next() {
		var (
			kind, mode string
			rel        *string
			mig        bool
			b          blocker
		)
		if err := rows.Scan(&kind, &mode, &rel, &mig, &b.pid, &b.holds, &b.user, &b.app, &b.client, &b.state, &b.xactStart, &b.queryStart); err != nil {
			return nil, err
		}
		if w == nil {
			w = &lockWait{on: "a " + kind + " lock", mode: mode, migLock: mig}
			switch {
			case mig:
				w.on = "the migration lock"
			case rel != nil:
				w.on = "a lock on " + *rel
			}
		}
		w.blockers = append(w.blockers, b)
	}
	return w, rows.Err()
}

// holders returns the blockers that hold the lock, or all of them when
// none was seen holding it.
func (w *lockWait) holders() []blocker {
	var out []blocker
	for _, b := range w.blockers {
		if b.holds {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return w.blockers
	}
	return out
}

// heldBy names the holders of the lock: "pid 42 (idle in transaction,
// ...)" joined with "and".
func (w *lockWait) heldBy() string {
	var parts []string
	for _, b := range w.holders() {
		parts = append(parts, b.String())
	}
	return strings.Join(parts, " and ")
}

// terminate is the statement that ends the holders' sessions.
func (w *lockWait) terminate() string {
	var calls []string
	for _, b := range w.holders() {
		calls = append(calls, fmt.Sprintf("pg_terminate_backend(%d)", b.pid))
	}
	return "SELECT " + strings.Join(calls, ", ")
}

// String describes b for an operator who must find and end it.
func (b blocker) String() string {
	var facts []string
	if b.state != "" {
		facts = append(facts, b.state)
	}
	if !b.holds {
		facts = append(facts, "itself waiting for the lock")
	}
	if b.xactStart != nil {
		facts = append(facts, "in a transaction since "+b.xactStart.UTC().Format(time.RFC3339))
	}
	if b.queryStart != nil {
		facts = append(facts, "last query started "+b.queryStart.UTC().Format(time.RFC3339))
	}
	if b.user != "" {
		facts = append(facts, "user "+b.user)
	}
	if b.app != "" {
		facts = append(facts, fmt.Sprintf("application %q", b.app))
	}
	if b.client != "" {
		facts = append(facts, "client "+b.client)
	}
	if len(facts) == 0 {
		return fmt.Sprintf("pid %d", b.pid)
	}
	return fmt.Sprintf("pid %d (%s)", b.pid, strings.Join(facts, ", "))
}

type lockBoundKey struct{}

// WithLockWait returns ctx with every lock wait of the statements the
// store runs under it through its pool bounded by d: each runs in a
// transaction that sets lock_timeout to d for itself alone (SET LOCAL,
// in the statement that begins it), a statement on its own in one of its
// own, so that nothing stays on a connection a pooler hands on. A
// statement that waits longer for a lock another session holds fails
// with SQLSTATE 55P03, which IsLockTimeout tells, rather than holding
// its connection, which others wait for, until its caller gives up. It
// is for reads that a person or agent waits on; a transaction that sets
// its own lock_timeout keeps it. Those transactions also run without JIT
// compilation (jit off, for themselves alone): see lockBoundBegin. A d of
// zero or less bounds nothing.
func WithLockWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, lockBoundKey{}, d)
}

// lockBound is the bound WithLockWait set on ctx, or 0.
func lockBound(ctx context.Context) time.Duration {
	d, _ := ctx.Value(lockBoundKey{}).(time.Duration)
	return max(d, 0)
}

// IsLockTimeout reports whether err is, or wraps, a statement that waited
// lock_timeout for a lock another session holds (SQLSTATE 55P03), as one
// under WithLockWait does once its bound passes.
func IsLockTimeout(err error) bool { return isLockTimeout(err) }

// lockBoundBegin is the statement that begins a transaction with opts
// whose lock waits are bounded by d: opts' own BEGIN, then lock_timeout
// set for the transaction alone, sent together (pgx sends a statement
// without arguments in the simple protocol), so that the bound costs no
// round trip. A shorter lock_timeout the role or database already has is
// kept: a DBA who set one wants no longer waits.
//
// The same statement turns JIT compilation off for the transaction: the
// reads bounded so are those a person or agent waits on, and the plans of
// the larger ones (a summary read from the messages, a page of the audit
// log) have cost estimates high enough for PostgreSQL to compile them,
// which took seconds for statements that run in milliseconds.
func lockBoundBegin(opts pgx.TxOptions, d time.Duration) string {
	begin := opts.BeginQuery
	if begin == "" {
		begin = "BEGIN"
		if opts.IsoLevel != "" {
			begin += " ISOLATION LEVEL " + string(opts.IsoLevel)
		}
		if opts.AccessMode != "" {
			begin += " " + string(opts.AccessMode)
		}
		if opts.DeferrableMode != "" {
			begin += " " + string(opts.DeferrableMode)
		}
	}
	return fmt.Sprintf(`%s; SELECT pg_catalog.set_config('lock_timeout', CASE WHEN cur.ms > 0 AND cur.ms < %[2]d THEN cur.ms ELSE %[2]d END::text, true),
		pg_catalog.set_config('jit', 'off', true)
		FROM (SELECT (pg_catalog.date_part('epoch', pg_catalog.current_setting('lock_timeout')::interval) * 1000)::bigint AS ms) cur`,
		strings.TrimRight(strings.TrimSpace(begin), ";"), max(d.Milliseconds(), 1))
}
