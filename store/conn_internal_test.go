package store

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRetryDecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	fatal := &pgconn.PgError{Severity: "FATAL", Code: "57P01"}
	cases := []struct {
		name        string
		ctx         context.Context
		err         error
		read, write bool
	}{
		{"no error", ctx, nil, false, false},
		{"server ended the session", ctx, fmt.Errorf("x: %w", fatal), true, false},
		{"connection exception", ctx, &pgconn.PgError{Code: "08006"}, true, false},
		{"lost mid-read", ctx, fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true, false},
		{"statement failed", ctx, &pgconn.PgError{Code: "23505"}, false, false},
		{"cancelled by caller", done, fmt.Errorf("x: %w", fatal), false, false},
	}
	for _, c := range cases {
		if got := (db{reads: true}).retry(c.ctx, c.err); got != c.read {
			t.Errorf("%s: read retried = %v, want %v", c.name, got, c.read)
		}
		if got := (db{}).retry(c.ctx, c.err); got != c.write {
			t.Errorf("%s: write retried = %v, want %v", c.name, got, c.write)
		}
	}
}
