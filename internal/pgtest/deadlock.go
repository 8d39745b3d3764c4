package pgtest

import (
	"context"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// ExecPastDeadlocks runs sql on s's pool, failing the test on error, and
// runs it again when it deadlocks: a statement that locks many tables at
// once in an order of its own (DROP SCHEMA pgbus CASCADE) may deadlock
// with the workers writing some of them meanwhile.
func ExecPastDeadlocks(tb testing.TB, ctx context.Context, s *store.Store, sql string) {
	tb.Helper()
	for try := 1; ; try++ {
		_, err := s.Pool().Exec(ctx, sql)
		if code, _ := store.SQLState(err); code == "40P01" && try < 20 {
			continue
		}
		if err != nil {
			tb.Fatalf("pgtest: %s: %v", sql, err)
		}
		return
	}
}
