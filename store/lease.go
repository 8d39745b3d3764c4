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
type Lease struct{ held *heldTx }

// heldTx is a transaction left open and idle on a connection of its own,
// taken out of the pool, holding an advisory lock: a Lease's, an
// AuditRun's.
type heldTx struct {
	mu   sync.Mutex
	conn *pgx.Conn
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
	var won bool
	_, err = conn.Exec(ctx, `BEGIN ISOLATION LEVEL READ COMMITTED`)
	if err == nil {
		_, err = conn.Exec(ctx, keepIdleSQL)
	}
	if err == nil {
		err = conn.QueryRow(ctx, lockSQL, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(append([]any{&won}, more...)...)
	}
	if err != nil || !won {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &heldTx{conn: conn}, nil
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
// asks: a connection that stopped answering would hold it for ever.
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

// Check says whether the lease still holds: its connection answers. A
// lease that fails its check is lost; Release it and try to lead again.
func (l *Lease) Check(ctx context.Context) error {
	l.held.mu.Lock()
	defer l.held.mu.Unlock()
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
func (l *Lease) Release(ctx context.Context) { l.held.release(ctx) }
