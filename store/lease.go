package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Election names a task that one process at a time does, for TryLead.
type Election int64

// ElectionAlerts elects the process that sends alerts: the ASCII bytes of
// "pgbusalr".
const ElectionAlerts Election = 0x7067627573_616c72

// ElectionDemo elects the one run of pgbus demo on a database, which drops
// and recreates the demo's queues: the ASCII bytes of "pgbusdem".
const ElectionDemo Election = 0x7067627573_64656d

// Lease is an election won: a transaction-scoped advisory lock held in a
// transaction left open, on a connection of its own taken out of the pool,
// for as long as the process keeps it. When the process dies or its
// connection drops, the database releases the lock and another process
// can win. A transaction lock rather than a session one, because a
// transaction pooler (PgBouncer in transaction mode) hands a session's
// server connection to others between transactions, lock and all, while
// it keeps an open transaction's connection to itself. The transaction
// writes nothing and, idle between statements, holds no snapshot, so it
// does not hold back vacuum.
//
// A lease that TryLeadRenewing won ends its transaction and takes the
// lock again in a new one every leaseRenewEvery: a pooler's PAUSE (and
// RECONNECT) waits until every server connection is released, holding
// every client's new transaction meanwhile, so a transaction held for as
// long as the process leads kept a PAUSE, taken for a failover or a
// restart of PostgreSQL, from ever finishing, and every application
// behind the pooler waited with it. Between the two transactions the
// lock is free for an instant: a process that wins it then yields it to
// the renewal (TryLeadRenewing).
type Lease struct {
	held *heldTx
	// quit ends keep between renewals, stop cuts short a renewal under
	// way (behind a paused pooler it waits); keep closes done.
	quit     chan struct{}
	quitOnce sync.Once
	stop     context.CancelFunc
	done     chan struct{}
	// lost is why keep lost the lease; nil while it holds.
	lost error
}

// leaseRenewEvery is how often a Lease ends its transaction and begins
// another: how long a pooler's PAUSE waits for it at most, besides the
// renewal's statements.
const leaseRenewEvery = time.Second

// leaseRenewBound bounds a renewal's statements when the context the
// lease was won under sets no statement timeout: behind a paused pooler
// they wait for its RESUME, and past the bound the lease is lost, to be
// won again at the next try.
const leaseRenewBound = 30 * time.Second

// heldTx is a transaction left open and idle on a connection of its own,
// taken out of the pool, holding an advisory lock: a Lease's, an
// AuditRun's.
type heldTx struct {
	mu   sync.Mutex
	conn *pgx.Conn
	// renewSQL and args take the lock again (renew), waiting for it.
	renewSQL string
	args     []any
}

// holdTx takes a connection out of the pool, begins on it a transaction
// that may sit idle (keepIdleSQL), and runs lockSQL there, a simple query
// whose first column says whether it won its lock, the rest scanned into
// more. It returns the transaction held, or nil when the lock was not won.
func (s *Store) holdTx(ctx context.Context, lockSQL string, args []any, more ...any) (*heldTx, error) {
	if s.pool == nil {
		return nil, errNoPool()
	}
	ctx, cancel := boundStatement(ctx)
	defer cancel()
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	conn := pc.Hijack()
	won, err := beginHeld(ctx, conn, lockSQL, args, more...)
	if err != nil || !won {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &heldTx{conn: conn, args: args}, nil
}

// beginHeld begins on conn a transaction that may sit idle and runs
// lockSQL there, as holdTx says.
func beginHeld(ctx context.Context, conn *pgx.Conn, lockSQL string, args []any, more ...any) (won bool, err error) {
	_, err = conn.Exec(ctx, `BEGIN ISOLATION LEVEL READ COMMITTED`)
	if err == nil {
		_, err = conn.Exec(ctx, keepIdleSQL)
	}
	if err == nil {
		err = conn.QueryRow(ctx, lockSQL, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(append([]any{&won}, more...)...)
	}
	return won, err
}

// renew ends the held transaction and takes the lock again in a new one,
// each a round trip of its own, so that a pooler in transaction mode gets
// the server connection back between them. It fails when the lock was
// not won again, or the connection failed; the connection is closed then.
func (h *heldTx) renew(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return fmt.Errorf("store: the lease was released")
	}
	_, err := h.conn.Exec(ctx, `COMMIT`)
	won := false
	if err == nil {
		// One round trip before the lock's: the lock is free until it runs.
		_, err = h.conn.Exec(ctx, `BEGIN ISOLATION LEVEL READ COMMITTED; `+keepIdleSQL+`; SET LOCAL lock_timeout = '`+renewLockWait+`'`)
	}
	if err == nil {
		err = h.conn.QueryRow(ctx, h.renewSQL, append([]any{pgx.QueryExecModeSimpleProtocol}, h.args...)...).Scan(&won)
	}
	if err == nil && won {
		return nil
	}
	_ = h.conn.Close(context.WithoutCancel(ctx))
	h.conn = nil
	if err != nil {
		return fmt.Errorf("store: the lease's connection was lost as it renewed its transaction: %w", err)
	}
	return fmt.Errorf("store: another process took the election as the lease renewed its transaction")
}

// release ends the transaction before it closes its connection, so that
// the lock is free when release returns (closing alone frees it only once
// the server has seen the connection end); calling it again does nothing.
func (h *heldTx) release(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = h.conn.Exec(ctx, `ROLLBACK`)
		_ = h.conn.Close(ctx)
		h.conn = nil
	}
}

// keepIdleSQL lets an election's transaction sit idle past the
// idle_in_transaction_session_timeout a role or database may set, which
// would otherwise end the lease within that time, again and again. It
// holds no snapshot and no row, only the election's advisory lock, so
// what that timeout guards against does not apply; SET LOCAL ends with the
// transaction.
const keepIdleSQL = `SET LOCAL idle_in_transaction_session_timeout = 0`

// electSQL takes an election's lock. Sent as a simple query: through the
// extended protocol its portal stayed open, with its snapshot, while the
// transaction sat idle, holding back vacuum of every table (queue tables
// included) for as long as the process led, hours.
const electSQL = `SELECT pg_try_advisory_xact_lock($1)`

// TryLead tries to win an election without waiting: it returns the lease,
// or nil when another process holds it. The election's statements (and
// the ping of the connection it takes) are bounded as WithStatementTimeout
// asks: a connection that stopped answering would hold it for ever. Its
// transaction stays open until Release: for a task of bounded length (a
// retention pass). A process that leads for as long as it runs takes
// TryLeadRenewing.
func (s *Store) TryLead(ctx context.Context, e Election) (*Lease, error) {
	held, err := s.holdTx(ctx, electSQL, []any{int64(e)})
	if err != nil {
		return nil, fmt.Errorf("store: elect: %w", err)
	}
	if held == nil {
		return nil, nil
	}
	return &Lease{held: held}, nil
}

// TryLeadRenewing is TryLead for a process that leads for as long as it
// runs (the alerting process): the lease ends its transaction and takes
// the lock again in a new one every leaseRenewEvery (see Lease), its
// renewals bounded as WithStatementTimeout asks, or by leaseRenewBound.
// A process that wins the lock waits leaseYieldWait before it leads,
// and yields it (nil) when the leader asked for it again meanwhile: it
// had won it between the leader's two transactions.
func (s *Store) TryLeadRenewing(ctx context.Context, e Election) (*Lease, error) {
	held, err := s.holdTx(ctx, electSQL, []any{int64(e)})
	if err != nil {
		return nil, fmt.Errorf("store: elect: %w", err)
	}
	if held == nil {
		return nil, nil
	}
	held.renewSQL = renewSQL
	if yield, err := held.leaderWaits(ctx, e); err != nil || yield {
		held.release(ctx)
		if err != nil {
			return nil, fmt.Errorf("store: elect: %w", err)
		}
		return nil, nil
	}
	bound := statementTimeout(ctx)
	if bound == 0 {
		bound = leaseRenewBound
	}
	keepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &Lease{held: held, quit: make(chan struct{}), stop: stop, done: make(chan struct{})}
	go l.keep(keepCtx, bound)
	return l, nil
}

// leaseYieldWait is how long a process that won a renewing election
// waits for the leader's renewal to ask for the lock before it leads: far
// longer than the instant between the leader's two transactions.
const leaseYieldWait = 200 * time.Millisecond

// renewSQL takes an election's lock again in a renewal, waiting for a
// process that won it between the leader's transactions to yield it (its
// leaseYieldWait), up to renewLockWait.
const renewSQL = `SELECT true FROM (SELECT pg_advisory_xact_lock($1)) l`

// renewLockWait is how long a renewal waits for the lock: a process that
// won it between the leader's transactions yields it after
// leaseYieldWait; one that keeps it leads, and the renewal fails.
const renewLockWait = "1s"

// leaderWaits waits leaseYieldWait, then says whether another session
// waits for e's lock, which h holds: the leader, renewing.
func (h *heldTx) leaderWaits(ctx context.Context, e Election) (bool, error) {
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(leaseYieldWait):
	}
	ctx, cancel := boundStatement(ctx)
	defer cancel()
	var waits bool
	err := h.conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_locks
		WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
		  AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1)`,
		pgx.QueryExecModeSimpleProtocol, int64(e)).Scan(&waits)
	return waits, err
}

// keep renews the lease's transaction every leaseRenewEvery until Release,
// or until a renewal fails: the lease is lost then, and Check says why.
func (l *Lease) keep(ctx context.Context, bound time.Duration) {
	defer close(l.done)
	t := time.NewTicker(leaseRenewEvery)
	defer t.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, bound)
		err := l.held.renew(rctx)
		cancel()
		if ctx.Err() != nil {
			return // released
		}
		if err != nil {
			l.held.mu.Lock()
			l.lost = err
			l.held.mu.Unlock()
			return
		}
	}
}

// Check says whether the lease still holds: its renewals succeeded and its
// connection answers. A lease that fails its check is lost; Release it and
// try to lead again.
func (l *Lease) Check(ctx context.Context) error {
	l.held.mu.Lock()
	defer l.held.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if l.held.conn == nil {
		return fmt.Errorf("store: the lease was released")
	}
	if err := l.held.conn.Ping(ctx); err != nil {
		return fmt.Errorf("store: the lease's connection was lost: %w", err)
	}
	return nil
}

// Release gives the election up, its lock free when it returns; calling
// it again does nothing.
func (l *Lease) Release(ctx context.Context) {
	if l.quit == nil { // TryLead's: nothing renews it
		l.held.release(ctx)
		return
	}
	l.quitOnce.Do(func() { close(l.quit) })
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		// A renewal waits, behind a paused pooler: cut short, it closes
		// the connection, which frees the lock once the server sees it.
		l.stop()
		<-l.done
	}
	l.stop()
	l.held.release(ctx)
}
