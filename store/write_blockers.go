package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// WriteBlockers describes the sessions holding table locks, taken in
// transactions begun at least waited ago, that keep outcome writes of
// physical queue queue waiting: locks that conflict with a row write, on
// the queue's table and pgbus.failures, on its archive when archive is
// set, and on dlq's table when dlq is not "". It is for a log that must
// tell why a write waited that long, past its call timeout, while the
// database answers. heldBy reads "pgmq.a_orders in ShareLock by pid 42
// (idle in transaction, ...)" joined with "; ", and terminate is the
// statement that ends those sessions; both are "" when no session holds
// such a lock.
func (s *Store) WriteBlockers(ctx context.Context, queue string, archive bool, dlq string, waited time.Duration) (heldBy, terminate string, err error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return "", "", err
	}
	tables := []string{queueTable(queue), "pgbus.failures"}
	if archive {
		tables = append(tables, archiveTable(queue))
	}
	if dlq != "" {
		tables = append(tables, queueTable(dlq))
	}
	return s.lockHolders(ctx, fmt.Sprintf("find the locks that hold the outcome writes of %q", queue), waited,
		`l.relation IN (SELECT to_regclass(t) FROM unnest($2::text[]) AS t)`, tables)
}

// LockHolders describes, as WriteBlockers does, the sessions holding
// table locks, taken at least waited ago, that keep row writes out of any
// table of pgbus's or PGMQ's schemas: for an error that must tell why a
// call waited past its bound while the database answers.
func (s *Store) LockHolders(ctx context.Context, waited time.Duration) (heldBy, terminate string, err error) {
	return s.lockHolders(ctx, "find the locks held on pgbus's and PGMQ's tables", waited,
		`c.relnamespace IN ('pgmq'::regnamespace, 'pgbus'::regnamespace)`)
}

// ReadBlockers describes, as LockHolders does, the sessions holding
// table locks, taken at least waited ago, that keep reads of pgbus's or
// PGMQ's tables waiting: ACCESS EXCLUSIVE (LOCK TABLE, VACUUM FULL, ALTER
// TABLE, REINDEX), and EXCLUSIVE, which holds the reads that lock rows.
// A session that waits for such a lock (an ALTER TABLE queued behind a
// long index build, or behind a reader idle in its transaction) holds the
// reads queued behind it too: it is named, itself waiting for the lock,
// with the sessions holding the locks it waits for, whatever their mode.
// It is for the error of a read that waited its lock bound
// (WithLockWait).
func (s *Store) ReadBlockers(ctx context.Context, waited time.Duration) (heldBy, terminate string, err error) {
	const what = "find the locks that hold reads of pgbus's and PGMQ's tables"
	err = s.diagnose(ctx, what, func(q querier) error {
		rows, err := q.Query(ctx, readBlockersSQL, waited.Microseconds())
		if err != nil {
			return fmt.Errorf("store: %s: %w", what, err)
		}
		heldBy, terminate, err = describeLocks(rows, what)
		return err
	})
	return heldBy, terminate, err
}

// readBlockersSQL lists, for ReadBlockers, the ACCESS EXCLUSIVE and
// EXCLUSIVE locks on pgbus's and PGMQ's tables, held or waited for, and
// the locks held that such a wait waits for, by sessions in transactions
// begun at least $1 microseconds ago: waits first.
const readBlockersSQL = `WITH r AS (
		SELECT l.relation, l.mode, l.pid, l.granted
		FROM pg_catalog.pg_locks l
		JOIN pg_catalog.pg_class c ON c.oid = l.relation
		WHERE l.locktype = 'relation' AND l.pid <> pg_backend_pid()
		  AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
		  AND l.mode IN ('ExclusiveLock', 'AccessExclusiveLock')
		  AND c.relnamespace IN ('pgmq'::regnamespace, 'pgbus'::regnamespace)
	), who AS (
		SELECT relation, mode, pid, granted AS holds FROM r
		UNION
		SELECT r.relation, h.mode, h.pid, true
		FROM r CROSS JOIN LATERAL unnest(pg_catalog.pg_blocking_pids(r.pid)) AS b(pid)
		JOIN pg_catalog.pg_locks h ON h.pid = b.pid AND h.locktype = 'relation' AND h.relation = r.relation AND h.granted
		WHERE NOT r.granted
	)
	SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), who.mode, who.pid, who.holds,
	       coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''),
	       coalesce(a.state, ''), a.xact_start, a.query_start
	FROM who
	JOIN pg_catalog.pg_class c ON c.oid = who.relation
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = who.pid
	WHERE a.xact_start <= clock_timestamp() - $1 * interval '1 microsecond' OR (a.xact_start IS NULL AND a.state IS NULL)
	ORDER BY 1, who.holds, who.pid
	LIMIT 10`

// lockHolders lists the granted table locks that conflict with a row
// write held by other sessions in transactions begun at least waited ago
// (or whose activity this role may not see), on the tables where (SQL over
// pg_locks l and pg_class c, its arguments from $2 on) selects. A lock
// taken after a call began cannot have held up the whole of it: a queue
// created meanwhile is no cause. A session seen idle, outside any
// transaction, holds nothing: pg_locks and pg_stat_activity are not read
// at one instant, so a short transaction (another queue's ALTER TABLE)
// can show in the first and have ended by the second. The time is the server's, as the
// transactions' starts are: a clock of the caller's a little ahead or
// behind would leave out a lock taken just before the call, or count one
// taken just after.
//
// It is asked beside the pool when every connection of the pool is in use
// (diagnose): by calls that wait for such a lock, as often as not.
func (s *Store) lockHolders(ctx context.Context, what string, waited time.Duration, where string, args ...any) (heldBy, terminate string, err error) {
	err = s.diagnose(ctx, what, func(q querier) error {
		heldBy, terminate, err = lockHoldersOn(ctx, q, what, waited, where, args...)
		return err
	})
	return heldBy, terminate, err
}

// heldTableLocksSQL selects the table locks other sessions of this
// database hold (relation ids repeat across databases made from one
// template), as describeLocks reads them, for the conditions that follow
// it (AND ...) to narrow.
const heldTableLocksSQL = `
		SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), l.mode, l.pid, true,
		       coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''),
		       coalesce(a.state, ''), a.xact_start, a.query_start
		FROM pg_catalog.pg_locks l
		JOIN pg_catalog.pg_class c ON c.oid = l.relation
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
		WHERE l.granted AND l.locktype = 'relation' AND l.pid <> pg_backend_pid()
		  AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())`

// lockHoldersOn is lockHolders asked through q.
func lockHoldersOn(ctx context.Context, q querier, what string, waited time.Duration, where string, args ...any) (heldBy, terminate string, err error) {
	rows, err := q.Query(ctx, heldTableLocksSQL+`
		  AND l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
		  AND (a.xact_start <= clock_timestamp() - $1 * interval '1 microsecond' OR (a.xact_start IS NULL AND a.state IS NULL))
		  AND `+where+`
		ORDER BY 1, l.pid
		LIMIT 10`, append([]any{waited.Microseconds()}, args...)...)
	if err != nil {
		return "", "", fmt.Errorf("store: %s: %w", what, err)
	}
	return describeLocks(rows, what)
}

// describeLocks reads the locks of rows (table, mode, pid, whether it
// holds the lock, and the session's activity) into heldBy and terminate,
// as lockHolders returns them.
func describeLocks(rows pgx.Rows, what string) (heldBy, terminate string, err error) {
	defer rows.Close()
	var held, calls []string
	seen := map[int]bool{}
	for rows.Next() {
		var table, mode string
		var b blocker
		if err := rows.Scan(&table, &mode, &b.pid, &b.holds, &b.user, &b.app, &b.client, &b.state, &b.xactStart, &b.queryStart); err != nil {
			return "", "", fmt.Errorf("store: %s: %w", what, err)
		}
		held = append(held, fmt.Sprintf("%s in %s by %s", table, mode, b))
		if !seen[b.pid] {
			seen[b.pid] = true
			calls = append(calls, fmt.Sprintf("pg_terminate_backend(%d)", b.pid))
		}
	}
	if err := rows.Err(); err != nil {
		return "", "", fmt.Errorf("store: %s: %w", what, err)
	}
	if len(held) == 0 {
		return "", "", nil
	}
	return strings.Join(held, "; "), "SELECT " + strings.Join(calls, ", "), nil
}
