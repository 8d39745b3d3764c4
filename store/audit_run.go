package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
)

// auditRunClass is the first key of the advisory locks AuditRun holds:
// the ASCII bytes of "pgba", as pg_locks shows it in classid.
const auditRunClass = 0x70676261

// AuditRun is the database session an operation holds while it runs, so
// that a reader of its pending audit entry can tell it still runs
// (AuditRunning): a shared advisory lock, under a key of its own, held in
// a transaction left open and idle on a connection taken out of the pool,
// as a Lease is, and for the same reasons: when the process dies or its
// connection drops, the database ends the session and the lock with it,
// and a transaction pooler (PgBouncer in transaction mode) keeps an open
// transaction's server connection to it. The transaction writes nothing
// and, idle between statements, holds no snapshot, so it does not hold
// back vacuum.
type AuditRun struct {
	// PID is the backend pid of the session, Key the lock's second key:
	// StartAudit records both with the entry.
	PID, Key int32

	held *heldTx
}

// HoldAuditRun takes a session for an operation about to run, and
// returns it held; nil without error when its lock, which nothing else
// takes but by chance, is held already. Release it once the operation's
// outcome is recorded.
func (s *Store) HoldAuditRun(ctx context.Context) (*AuditRun, error) {
	r := &AuditRun{Key: rand.Int32N(1<<31-1) + 1}
	held, err := s.holdTx(ctx, `SELECT pg_try_advisory_xact_lock_shared($1, $2), pg_backend_pid()`,
		[]any{int32(auditRunClass), r.Key}, &r.PID)
	if err != nil {
		return nil, fmt.Errorf("store: hold a session for the audit log: %w", err)
	}
	if held == nil {
		return nil, nil
	}
	r.held = held
	return r, nil
}

// Release ends the session, its lock with it; calling it again, or on a
// nil AuditRun, does nothing.
func (r *AuditRun) Release(ctx context.Context) {
	if r != nil {
		r.held.release(ctx)
	}
}

// errAuditRunStandby says why a standby cannot tell which operations run:
// the primary's advisory locks are not replayed on it.
var errAuditRunStandby = errors.New("store: a standby does not see the sessions of its primary, nor their locks")

// AuditRunning reports, of the pending entries among entries that name the
// session running them (RunPID), which still run: that session holds its
// lock. An entry left out of the map does not run any more. It fails where
// that cannot be told: on a standby, or for a role that may not read
// pg_locks (readable by every role, unless revoked).
func (s *Store) AuditRunning(ctx context.Context, entries []AuditEntry) (map[int64]bool, error) {
	var ids []int64
	var pids, keys []int32
	for _, e := range entries {
		if e.Pending && e.RunPID != 0 {
			ids, pids, keys = append(ids, e.ID), append(pids, e.RunPID), append(keys, e.RunKey)
		}
	}
	running := map[int64]bool{}
	if len(ids) == 0 {
		return running, nil
	}
	var standby bool
	var live []int64
	err := s.reads.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery(), ARRAY(
			SELECT e.id FROM unnest($1::bigint[], $2::int[], $3::int[]) AS e(id, pid, key)
			WHERE EXISTS (SELECT FROM pg_catalog.pg_locks l
				WHERE l.locktype = 'advisory' AND l.granted AND l.pid = e.pid
				  AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
				  AND l.classid = $4::int::oid AND l.objid = e.key::oid AND l.objsubid = 2))`,
		ids, pids, keys, int32(auditRunClass)).Scan(&standby, &live)
	if err != nil {
		return nil, fmt.Errorf("store: tell which operations of the audit log still run: %w", err)
	}
	if standby {
		return nil, errAuditRunStandby
	}
	for _, id := range live {
		running[id] = true
	}
	return running, nil
}
