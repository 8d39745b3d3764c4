package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// TablesHeldError is a drop given up because other sessions held the
// queue's tables, or its DLQ's group counts, all the while: the drop took
// none of them, so nothing was dropped.
type TablesHeldError struct {
	// Queue is the queue whose drop was given up.
	Queue string
	// Waited is how long the drop tried.
	Waited time.Duration
	// HeldBy names the tables (or the DLQ's group counts), their lock
	// modes and the sessions that held them when the drop gave up ("" when
	// none was seen by then).
	HeldBy string
	// Terminate is the statement that ends those sessions.
	Terminate string
	// Err is why the drop stopped trying: its context's end.
	Err error
}

// Error says which queue's drop was given up, after how long, and who
// held its tables.
func (e *TablesHeldError) Error() string {
	held := "other sessions"
	if e.HeldBy != "" {
		held = e.HeldBy
	}
	return fmt.Sprintf("store: drop queue %q: its tables, or its DLQ's group counts, were held by other sessions for %s, and the drop, which takes them only all at once, took none: %s (%v)",
		e.Queue, e.Waited.Round(time.Millisecond), held, e.Err)
}

// Unwrap returns why the drop stopped trying.
func (e *TablesHeldError) Unwrap() error { return e.Err }

// dropLockTry is how long the first try of lockForDrop waits for the
// tables, dropLockTryMax the longest a later try waits, and
// dropLockPauseMax the longest pause between tries.
const (
	dropLockTry      = 100 * time.Millisecond
	dropLockTryMax   = time.Second
	dropLockPauseMax = time.Second
)

// lockForDrop takes ACCESS EXCLUSIVE locks on every table of the physical
// queues names that exists, and the lock of the DLQ's group counts
// (which a fold or recount of them holds), all at once, before the drop
// touches any of them. A drop that took each table as it came to it held
// the ones done while it waited for the next (one a long read, or a read
// of every DLQ, held): every read of the queue's tables then waited
// behind it, and a read of every DLQ, holding some of them, was itself
// held up by another drop. Here each try waits a bounded time, and one
// that fails lets go of what it took (ROLLBACK TO SAVEPOINT) and pauses
// before the next: other sessions wait a try at most. A try waits twice
// as long as the one before, from dropLockTry up to dropLockTryMax: a
// try gets its tables only once every session that held them when it
// began has let go (sessions that come later wait behind it), so tries
// of one length alone never got through reads that overlap and each
// hold the tables longer than a try. The tries
// stop at ctx's end, or once they waited as long as one statement may
// (WithStatementTimeout), with a TablesHeldError naming who held the
// tables, the first try cut short by ctx included. The lock_timeout and statement_timeout the
// transaction had are set back once all is held.
func (s *Store) lockForDrop(ctx context.Context, tx pgx.Tx, queue string, names []string) error {
	tables, err := existingTables(ctx, tx, names)
	if err != nil {
		return err
	}
	var lockTimeout, stmtTimeout string
	if err := tx.QueryRow(ctx, `SELECT current_setting('lock_timeout'), current_setting('statement_timeout')`).Scan(&lockTimeout, &stmtTimeout); err != nil {
		return fmt.Errorf("store: drop queue %q: %w", queue, err)
	}
	lock := []string{`SELECT pg_advisory_xact_lock(pgbus.dlq_groups_lock_key(` + sqlText(DLQName(queue)) + `))`}
	if len(tables) > 0 {
		// Tables first, as a recount takes its DLQ's table, then the
		// group counts' lock.
		lock = append([]string{`LOCK TABLE ` + strings.Join(tables, ", ") + ` IN ACCESS EXCLUSIVE MODE`}, lock...)
	}
	// The tries together wait as one statement may (WithStatementTimeout).
	if d := statementTimeout(ctx); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	start, pause, try, held := time.Now(), 20*time.Millisecond, dropLockTry, false
	for {
		err := tryLock(ctx, tx, lock, try)
		if err == nil {
			break
		}
		if ctx.Err() == nil && !tryHeldUp(err) {
			return fmt.Errorf("store: drop queue %q: lock its tables: %w", queue, err)
		}
		held = held || isLockTimeout(err) || ctx.Err() == nil
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
				pause, try = min(2*pause, dropLockPauseMax), min(2*try, dropLockTryMax)
				continue
			}
		}
		e := s.tablesHeld(ctx, queue, tables, start)
		if !held && e.HeldBy == "" {
			// Ended in its first try, or before, while no other session
			// held the tables: its caller's own end. One that held them
			// while that try waited held the drop up.
			return fmt.Errorf("store: drop queue %q: %w", queue, ctx.Err())
		}
		return e
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)`, lockTimeout, stmtTimeout); err != nil {
		return fmt.Errorf("store: drop queue %q: %w", queue, err)
	}
	return nil
}

// tryHeldUp reports whether err, of a try of lockForDrop whose context
// has not ended, is the try held up by another session: a lock wait past
// lock_timeout, the try's statement past its statement_timeout (several
// waits each under lock_timeout), or a deadlock, which the next try may
// not meet.
func tryHeldUp(err error) bool {
	code, _ := SQLState(err)
	return code == "55P03" || code == "57014" || code == "40P01"
}

// tryLock runs the statements of lock (which take locks) in a savepoint
// of tx, together, each lock wait bounded by try and the whole of them
// too (a LOCK TABLE of many tables waits for each in turn); on failure
// the savepoint is rolled back, and with it the locks taken and the
// settings.
func tryLock(ctx context.Context, tx pgx.Tx, lock []string, try time.Duration) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	ms := try.Milliseconds()
	_, err = sp.Exec(ctx, fmt.Sprintf(`SELECT set_config('lock_timeout', '%dms', true), set_config('statement_timeout', '%dms', true); %s`, ms, ms, strings.Join(lock, "; ")))
	if err != nil {
		undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return errors.Join(err, sp.Rollback(undo))
	}
	return sp.Commit(ctx)
}

// existingTables returns the queue and archive tables of the physical
// queues names that exist, quoted.
func existingTables(ctx context.Context, tx pgx.Tx, names []string) ([]string, error) {
	var all []string
	for _, n := range names {
		all = append(all, queueTable(n), archiveTable(n))
	}
	var out []string
	err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(t ORDER BY o), '{}') FROM unnest($1::text[]) WITH ORDINALITY u(t, o) WHERE to_regclass(t) IS NOT NULL`, all).Scan(&out)
	if err != nil {
		return nil, fmt.Errorf("store: drop queues %s: find their tables: %w", strings.Join(names, ", "), err)
	}
	return out, nil
}

// tablesHeld is the TablesHeldError of a drop of queue that gave up on
// tables at its context's end, with the sessions holding them, asked
// within a few seconds beside the drop's transaction, which is aborted.
func (s *Store) tablesHeld(ctx context.Context, queue string, tables []string, start time.Time) *TablesHeldError {
	e := &TablesHeldError{Queue: queue, Waited: time.Since(start), Err: ctx.Err()}
	if errors.Is(e.Err, context.Canceled) {
		return e // its caller is gone: no one to tell who held them
	}
	ask, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	what := "find the sessions holding the tables of queue " + queue
	_ = s.diagnose(ask, what, func(q querier) error {
		rows, err := q.Query(ask, heldTableLocksSQL+`
			  AND l.relation = ANY(ARRAY(SELECT to_regclass(t) FROM unnest($1::text[]) t))
			UNION ALL
			SELECT 'the group counts of ' || $2 || ' (an advisory lock)', l.mode, l.pid, true,
			       coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''),
			       coalesce(a.state, ''), a.xact_start, a.query_start
			FROM pg_catalog.pg_locks l
			LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
			WHERE l.granted AND l.locktype = 'advisory' AND l.pid <> pg_backend_pid() AND l.objsubid = 1
			  AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
			  AND (l.classid::int8 << 32 | l.objid::int8) = pgbus.dlq_groups_lock_key($2)
			ORDER BY 1, 3
			LIMIT 10`, tables, DLQName(queue))
		if err != nil {
			return err
		}
		e.HeldBy, e.Terminate, err = describeLocks(rows, what)
		return err
	})
	return e
}
