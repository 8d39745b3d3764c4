package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A statement someone cancelled (pg_cancel_backend) is told from one that
// ran past statement_timeout, though both are SQLSTATE 57014: the advice to
// raise statement_timeout fits only the second.
func TestLimitOfTellsACancelFromAStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SET statement_timeout = '50ms'`); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `SELECT pg_sleep(2)`)
	if lim := store.LimitOf(err); lim != store.LimitStatementTimeout {
		t.Errorf("a statement past statement_timeout (%v): limit %v, want LimitStatementTimeout", err, lim)
	}
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	pid := conn.PgConn().PID()
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, `SELECT pg_sleep(30)`)
		done <- err
	}()
	// The cancel is sent once the sleep runs, in a statement of its own:
	// sent in the statement that looks, it could reach the session
	// before the sleep started, and be lost.
	var sleeping bool
	for deadline := time.Now().Add(10 * time.Second); !sleeping && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := other.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep(30)%' AND state = 'active')`, pid).Scan(&sleeping); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.Exec(ctx, `SELECT pg_cancel_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if lim := store.LimitOf(err); lim != store.LimitCancelled {
		t.Errorf("a statement cancelled by pg_cancel_backend (%v): limit %v, want LimitCancelled", err, lim)
	}
}
