package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

type stmtTimeoutKey struct{}

// WithStatementTimeout returns ctx with each statement the store runs
// under it bounded by d, rather than the call as a whole: a call of many
// statements, as RunRetention's pass over every queue's archive, may take
// long on a healthy database, while one statement that gets no answer for
// d means its connection stopped answering. When the bound passes, pgx
// closes the connection and the pool drops it. Statements in transactions
// are bounded one by one (Exec, Query, QueryRow, Commit, Rollback). A d of
// zero or less bounds nothing.
func WithStatementTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, stmtTimeoutKey{}, d)
}

// statementTimeout is the bound WithStatementTimeout set on ctx, or 0.
func statementTimeout(ctx context.Context) time.Duration {
	d, _ := ctx.Value(stmtTimeoutKey{}).(time.Duration)
	return max(d, 0)
}

// boundStatement bounds one statement under ctx as WithStatementTimeout
// asked, if it did.
func boundStatement(ctx context.Context) (context.Context, context.CancelFunc) {
	if d := statementTimeout(ctx); d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return ctx, func() {}
}

// cancelOnClose ends a bounded query's context once its rows are closed.
type cancelOnClose struct {
	pgx.Rows
	cancel context.CancelFunc
}

func (r cancelOnClose) Close() {
	r.Rows.Close()
	r.cancel()
}

// boundedTx bounds each statement of a transaction begun under a
// statement timeout; the transaction as a whole may last longer (the
// retention election holds one for its whole pass).
type boundedTx struct {
	pgx.Tx
}

func (t boundedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := boundStatement(ctx)
	defer cancel()
	return t.Tx.Exec(ctx, sql, args...)
}

func (t boundedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel := boundStatement(ctx)
	rows, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		cancel()
		return rows, err
	}
	return cancelOnClose{Rows: rows, cancel: cancel}, nil
}

func (t boundedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel := boundStatement(ctx)
	return cancelAfterScan{row: t.Tx.QueryRow(ctx, sql, args...), cancel: cancel}
}

func (t boundedTx) Commit(ctx context.Context) error {
	ctx, cancel := boundStatement(ctx)
	defer cancel()
	return t.Tx.Commit(ctx)
}

func (t boundedTx) Rollback(ctx context.Context) error {
	ctx, cancel := boundStatement(ctx)
	defer cancel()
	return t.Tx.Rollback(ctx)
}

// cancelAfterScan ends a bounded row's context once it is scanned.
type cancelAfterScan struct {
	row    pgx.Row
	cancel context.CancelFunc
}

func (r cancelAfterScan) Scan(dest ...any) error {
	defer r.cancel()
	return r.row.Scan(dest...)
}
