package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// readyLockTimeout is how long the check of idle queues waits for a
// table's lock.
const readyLockTimeout = "100ms"

// MaxReadyCheck is how many physical queues one ReadyQueues call checks:
// one statement takes a lock on each table it reads until it ends.
const MaxReadyCheck = 100

// ReadyQueues reports which of the physical queues hold a message visible
// now, in one statement: workers of idle queues ask it once per poll
// interval for all of them, where a read of each cost a transaction per
// queue and interval (hundreds of queues kept a core busy finding
// nothing). A queue dropped meanwhile fails the whole call, as a read of it
// would; its worker finds out by reading.
func (s *Store) ReadyQueues(ctx context.Context, queues []string) ([]string, error) {
	if len(queues) == 0 || len(queues) > MaxReadyCheck {
		return nil, invalidf("check queues for visible messages: pass 1 to %d queues, not %d", MaxReadyCheck, len(queues))
	}
	var sql strings.Builder
	for i, q := range queues {
		if err := ValidatePhysicalName(q); err != nil {
			return nil, err
		}
		if i > 0 {
			sql.WriteString(" UNION ALL ")
		}
		// The same condition as a read's, answered by the vt index.
		sql.WriteString("SELECT " + strconv.Itoa(i) + " WHERE EXISTS (SELECT FROM " + queueTable(q) + " WHERE vt <= clock_timestamp())")
	}
	// The text changes with the set of idle queues: sent as a simple
	// query, it does not churn the connections' prepared statements. Its
	// lock_timeout keeps one table locked by another session (a long
	// reader before a drop, a VACUUM FULL) from holding the check, and so
	// every idle queue, for as long: it fails at once, and the caller has
	// the workers read their queues themselves.
	conn, err := s.db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: check %d queues for visible messages: %w", len(queues), err)
	}
	defer conn.Release()
	results, err := execTraced(ctx, conn.Conn(), "SET LOCAL lock_timeout = '"+readyLockTimeout+"'; "+sql.String())
	if err == nil && len(results) != 2 {
		err = fmt.Errorf("%d results, not 2", len(results))
	}
	if err != nil {
		return nil, fmt.Errorf("store: check %d queues for visible messages: %w", len(queues), err)
	}
	var found []int
	for _, row := range results[1].Rows {
		i, err := strconv.Atoi(string(row[0]))
		if err != nil || i < 0 || i >= len(queues) {
			return nil, fmt.Errorf("store: check %d queues for visible messages: unexpected row %q", len(queues), row[0])
		}
		found = append(found, i)
	}
	ready := make([]string, 0, len(found))
	for _, i := range found {
		ready = append(ready, queues[i])
	}
	return ready, nil
}

// execTraced runs sql, statements pgx's Query would read only the first
// result of, on the connection itself, telling the connection's tracer as
// pgx would: a program that traces pgbus's statements sees it too.
func execTraced(ctx context.Context, conn *pgx.Conn, sql string) ([]*pgconn.Result, error) {
	tracer, _ := conn.Config().Tracer.(pgx.QueryTracer)
	if tracer != nil {
		ctx = tracer.TraceQueryStart(ctx, conn, pgx.TraceQueryStartData{SQL: sql})
	}
	results, err := conn.PgConn().Exec(ctx, sql).ReadAll()
	if tracer != nil {
		var tag pgconn.CommandTag
		if len(results) > 0 {
			tag = results[len(results)-1].CommandTag
		}
		tracer.TraceQueryEnd(ctx, conn, pgx.TraceQueryEndData{CommandTag: tag, Err: err})
	}
	return results, err
}
