package pgtest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Crowd opens connections to the server at url until it refuses one for
// having as many as it allows (SQLSTATE 53300), and holds them until the
// returned release, which the test's cleanup also calls. Give it a server
// of the test's own with a low max_connections (LimitConnections): it
// takes every connection the server has left.
func Crowd(tb testing.TB, url string) (release func()) {
	tb.Helper()
	ctx := context.Background()
	var conns []*pgx.Conn
	release = func() {
		for _, c := range conns {
			_ = c.Close(ctx)
		}
		conns = nil
	}
	tb.Cleanup(release)
	for range 1000 {
		c, err := pgx.Connect(ctx, url)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "53300" {
			return release
		}
		if err != nil {
			tb.Fatalf("crowd the server: %v", err)
		}
		conns = append(conns, c)
	}
	tb.Fatal("crowd the server: it took 1000 connections without refusing one; give it a lower max_connections")
	return release
}

// LimitConnections sets the max_connections of the server at url for its
// next start: the caller restarts it.
func LimitConnections(tb testing.TB, url string, n int) {
	tb.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET max_connections = %d", n)); err != nil {
		tb.Fatal(err)
	}
}
