package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PurgeQueue deletes every message of a queue (not its archive), with
// their failure history, and returns how many there were. A queue with
// priority levels has no table of its own name, only its levels': all of
// them are purged in one transaction, so that a purge never stops with
// some levels done. A level whose tables were dropped outside pgbus is
// left out, as its queue's stats leave it out; a queue none of whose
// tables exist is not found.
//
// A role that may truncate the tables (their owner) empties them at once:
// a backlog of tens of millions, the usual reason for a purge, would take
// a row-by-row delete past the call timeout, and leave the tables
// bloated. The truncate holds the tables' exclusive lock while it
// counts their messages, so sends and reads of the queue wait that long.
// When another session holds the tables for more than purgeLockWait (a
// long read, a transaction left open), or the role may not truncate, the
// messages are deleted row by row, which waits for no reader.
func (s *Store) PurgeQueue(ctx context.Context, name string) (int64, error) {
	if err := ValidatePhysicalName(name); err != nil {
		return 0, err
	}
	n, err := s.purgeQueue(ctx, name, true)
	// Deleting row by row, the purge may meet a worker's batch locking
	// the same rows in another order: PostgreSQL ends one of the two,
	// and the purge, all or nothing, starts again.
	for try := 0; errors.Is(err, errPurgeBusy) || try < 3 && isDeadlock(err); try++ {
		n, err = s.purgeQueue(ctx, name, false)
	}
	return n, err
}

// isDeadlock reports whether err is PostgreSQL's deadlock_detected: the
// transaction was rolled back, and may be run again.
func isDeadlock(err error) bool {
	code, _ := SQLState(err)
	return code == "40P01"
}

// purgeLockWait bounds how long a purge waits for its tables' exclusive
// lock before it deletes row by row instead: readers and senders queue
// behind the waiting lock, so they stall no longer than this. It is below
// the shortest database call timeout, which would otherwise give the
// purge up before it turned to deleting.
const purgeLockWait = 500 * time.Millisecond

// errPurgeBusy is a truncating purge that could not get its tables'
// exclusive lock within purgeLockWait.
var errPurgeBusy = errors.New("the queue's tables are busy")

// purgeQueue is PurgeQueue, truncating the tables when mayTruncate and
// the role may.
func (s *Store) purgeQueue(ctx context.Context, name string, mayTruncate bool) (int64, error) {
	var total int64
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		tables, truncate, err := purgeTables(ctx, tx, name)
		if err != nil {
			return err
		}
		if truncate && mayTruncate {
			total, err = truncateQueue(ctx, tx, name, tables)
		} else {
			total, err = deleteQueue(ctx, tx, tables)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// purgeTables returns the physical queues of queue name whose tables
// exist, and whether the role may truncate all of them.
func purgeTables(ctx context.Context, tx pgx.Tx, name string) (present []string, truncate bool, err error) {
	var levels int
	err = tx.QueryRow(ctx, `SELECT coalesce((SELECT priorities FROM pgbus.queues WHERE queue_name = $1), 0)`, name).Scan(&levels)
	if err != nil {
		return nil, false, fmt.Errorf("store: purge queue %q: read its priority levels: %w", name, err)
	}
	rows, err := tx.Query(ctx, `SELECT n, has_table_privilege(t, 'TRUNCATE')
		FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i)
		CROSS JOIN LATERAL to_regclass(format('%I.%I', 'pgmq', 'q_' || n)) AS t
		WHERE t IS NOT NULL ORDER BY i`, physicalNames(name, levels))
	if err != nil {
		return nil, false, fmt.Errorf("store: purge queue %q: find its tables: %w", name, err)
	}
	type table struct {
		name     string
		truncate bool
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (table, error) {
		var t table
		return t, r.Scan(&t.name, &t.truncate)
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: purge queue %q: find its tables: %w", name, err)
	}
	if len(found) == 0 {
		return nil, false, notFoundf("queue %q does not exist", name)
	}
	truncate = true
	for _, t := range found {
		present = append(present, t.name)
		truncate = truncate && t.truncate
	}
	return present, truncate, nil
}

// truncateQueue counts and truncates the tables of physical queues
// tables, taking their messages' failure history with them. The
// exclusive lock comes first, so that no message is sent, or failure
// written, between the count and the truncate; waited for longer than
// purgeLockWait, it is errPurgeBusy.
func truncateQueue(ctx context.Context, tx pgx.Tx, name string, tables []string) (int64, error) {
	quoted := make([]string, len(tables))
	for i, p := range tables {
		quoted[i] = queueTable(p)
	}
	list := strings.Join(quoted, ", ")
	var before string
	if err := tx.QueryRow(ctx, `SELECT current_setting('lock_timeout')`).Scan(&before); err != nil {
		return 0, fmt.Errorf("store: purge queue %q: read lock_timeout: %w", name, err)
	}
	if err := setLockTimeout(ctx, tx, purgeLockWait); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+list+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		if isLockTimeout(err) {
			return 0, errPurgeBusy
		}
		return 0, queueErr(err, "purge", name)
	}
	// The failure history's rows may be locked by a worker's write under
	// way: that wait is the session's own to bound, not the purge's.
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, before); err != nil {
		return 0, fmt.Errorf("store: purge queue %q: restore lock_timeout: %w", name, err)
	}
	var total int64
	for i, p := range tables {
		var n int64
		err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM pgbus.failures f USING `+quoted[i]+` q
				WHERE f.queue_name = $1 AND f.msg_id = q.msg_id)
			SELECT count(*) FROM `+quoted[i], p).Scan(&n)
		if err != nil {
			return 0, queueErr(err, "purge", p)
		}
		total += n
	}
	if _, err := tx.Exec(ctx, `TRUNCATE `+list); err != nil {
		return 0, queueErr(err, "purge", name)
	}
	return total, nil
}

// deleteQueue deletes the messages of physical queues tables row by row,
// with their failure history.
//
// A worker's retry that held a message's row when the delete came to it
// wrote a failure the delete's snapshot does not see, and deleted the
// message once the worker committed: a second statement, with a snapshot
// of its own, deletes the failures of messages in neither the queue nor
// its archive. A retry after the delete finds no message, and writes none.
func deleteQueue(ctx context.Context, tx pgx.Tx, tables []string) (int64, error) {
	var total int64
	for _, p := range tables {
		var n int64
		err := tx.QueryRow(ctx, `WITH d AS (DELETE FROM `+queueTable(p)+` RETURNING msg_id),
			f AS (DELETE FROM pgbus.failures WHERE queue_name = $1 AND msg_id IN (SELECT msg_id FROM d))
			SELECT count(*) FROM d`, p).Scan(&n)
		if err != nil {
			return 0, queueErr(err, "purge", p)
		}
		var archived bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, archiveTable(p)).Scan(&archived); err != nil {
			return 0, queueErr(err, "purge", p)
		}
		inArchive := ""
		if archived {
			inArchive = ` AND NOT EXISTS (SELECT 1 FROM ` + archiveTable(p) + ` a WHERE a.msg_id = f.msg_id)`
		}
		if _, err := tx.Exec(ctx, `DELETE FROM pgbus.failures f WHERE f.queue_name = $1
			AND NOT EXISTS (SELECT 1 FROM `+queueTable(p)+` q WHERE q.msg_id = f.msg_id)`+inArchive, p); err != nil {
			return 0, queueErr(err, "purge", p)
		}
		total += n
	}
	return total, nil
}
