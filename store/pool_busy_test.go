package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// With every connection of the pool in use, a question about the locks is
// asked on one connection made beside it, and only one at a time: however
// many calls time out at once, they add one connection to the database's.
// A question that cannot have it before its context ends says so.
func TestQuestionsBesideAnExhaustedPoolTakeTurns(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.URL(t)+"&pool_max_conns=1")
	ctx := testContext(t)
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if exhausted, size := st.PoolExhausted(); !exhausted || size != 1 {
		t.Fatalf("PoolExhausted() = %v, %d with its one connection taken; want true, 1", exhausted, size)
	}
	release := st.HoldAside()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, _, err = st.LockHolders(short, time.Second)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another question waits on the one connection made beside it") {
		t.Fatalf("LockHolders while the connection beside the pool is taken: %v; want it to wait its turn, then say so", err)
	}
	release()
	if _, _, err := st.LockHolders(ctx, time.Second); err != nil {
		t.Fatalf("LockHolders on its turn beside the exhausted pool: %v", err)
	}
}
