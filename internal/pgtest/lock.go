package pgtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/store"
)

// HeldLock is a lock on one of PGMQ's tables, held by a transaction of
// its own, as another session's LOCK TABLE, VACUUM FULL or open
// transaction holds one: in SHARE mode (HoldLock) reads go on and row
// writes wait; in ACCESS EXCLUSIVE mode (HoldExclusiveLock) reads wait
// too.
type HeldLock struct {
	// PID is the backend holding it (pg_backend_pid).
	PID     int
	tb      testing.TB
	st      *store.Store
	release func()
}

// HoldLock takes a SHARE lock on table of schema pgmq (such as "q_orders")
// through st's pool, held until Release or the end of the test.
func HoldLock(tb testing.TB, st *store.Store, table string) *HeldLock {
	tb.Helper()
	return holdLock(tb, st, table, "SHARE")
}

// HoldExclusiveLock takes an ACCESS EXCLUSIVE lock on table of schema
// pgmq through st's pool, held until Release or the end of the test:
// every read of the table waits for it. Take it through a store of its
// own on the database (OpenStore), as another process would, so that the
// calls waiting for it can take every connection of the store under test.
func HoldExclusiveLock(tb testing.TB, st *store.Store, table string) *HeldLock {
	tb.Helper()
	return holdLock(tb, st, table, "ACCESS EXCLUSIVE")
}

func holdLock(tb testing.TB, st *store.Store, table, mode string) *HeldLock {
	tb.Helper()
	ctx := Context(tb)
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	l := &HeldLock{tb: tb, st: st, release: func() { once.Do(func() { _ = tx.Rollback(context.Background()) }) }}
	tb.Cleanup(l.Release)
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&l.PID); err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{"pgmq", table}.Sanitize()+` IN `+mode+` MODE`); err != nil {
		tb.Fatal(err)
	}
	return l
}

// Release ends the lock's transaction; calling it again does nothing.
func (l *HeldLock) Release() { l.release() }

// Waiting returns the backends waiting for the lock: the writes it holds.
func (l *HeldLock) Waiting() []int {
	l.tb.Helper()
	rows, err := l.st.Pool().Query(Context(l.tb), `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, l.PID)
	if err != nil {
		l.tb.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		l.tb.Fatal(err)
	}
	return pids
}

// AwaitWaiting returns once n backends or more wait for the lock
// (Waiting), failing the test if that does not come within its context.
func (l *HeldLock) AwaitWaiting(n int) {
	l.tb.Helper()
	ctx := Context(l.tb)
	for len(l.Waiting()) < n {
		select {
		case <-ctx.Done():
			l.tb.Fatalf("pgtest: %d backends never came to wait for the lock of pid %d: %v", n, l.PID, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Occupy runs n calls of call at once, each of which must come to wait
// for the lock (a read of its table), and returns once n backends wait:
// n calls of a store whose pool has n connections hold all of them. The
// calls' context ends, and the lock is released, when the test ends;
// Occupy waits for the calls to return then.
func (l *HeldLock) Occupy(n int, call func(ctx context.Context)) {
	l.tb.Helper()
	ctx, cancel := context.WithCancel(Context(l.tb))
	var wg sync.WaitGroup
	l.tb.Cleanup(func() {
		l.Release()
		cancel()
		wg.Wait()
	})
	for range n {
		wg.Go(func() { call(ctx) })
	}
	l.AwaitWaiting(n)
}

// TakenMeanwhile runs call while another transaction deletes ids from the
// PGMQ table of dlq, as a racing retry or discard takes them, and commits
// that transaction once call waits for one of their rows: call selected
// them, and finds them gone when it comes to move them. It returns what
// call returned.
func TakenMeanwhile[R any](tb testing.TB, st *store.Store, dlq string, ids []int64, call func(context.Context) (R, error)) (R, error) {
	tb.Helper()
	ctx := Context(tb)
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{"pgmq", "q_" + dlq}.Sanitize()+` WHERE msg_id = ANY($1)`, ids); err != nil {
		tb.Fatal(err)
	}
	type result struct {
		r   R
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := call(ctx)
		done <- result{r, err}
	}()
	for blocked := 0; blocked == 0; {
		select {
		case r := <-done:
			tb.Fatalf("the call ended without waiting for the rows taken: %+v, %v", r.r, r.err)
		case <-time.After(10 * time.Millisecond): // poll gently
		}
		blocked = Int(tb, st, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid)
	}
	if err := tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
	r := <-done
	return r.r, r.err
}
