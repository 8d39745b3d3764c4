package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// WriteBlockers names the sessions whose table locks keep a queue's
// outcome writes out, on the tables asked about only, with the statement
// that ends them, if taken in a transaction begun before the time asked
// of; nothing when no lock is held, and an error for a name that is no
// queue's.
func TestWriteBlockers(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	if held, end, err := s.WriteBlockers(ctx, q, true, store.DLQName(q), time.Now()); err != nil || held != "" || end != "" {
		t.Fatalf("without locks: %q, %q, %v; want nothing", held, end, err)
	}
	before := time.Now().Add(-time.Second) // the server's clock may be a little behind
	pid := pgtest.HoldLock(t, s, "a_"+q).PID
	held, end, err := s.WriteBlockers(ctx, q, true, "", time.Now())
	if err != nil || !strings.HasPrefix(held, fmt.Sprintf(`pgmq.a_%s in ShareLock by pid %d (idle in transaction`, q, pid)) ||
		end != fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid) {
		t.Fatalf("with the archive locked: %q, %q, %v; want the lock, its session and the statement that ends it", held, end, err)
	}
	// Every table of pgbus and PGMQ, and only locks taken since before a
	// time.
	if held, end2, err := s.LockHolders(ctx, time.Now()); err != nil || !strings.Contains(held, fmt.Sprintf(`pgmq.a_%s in ShareLock by pid %d`, q, pid)) || end2 == "" {
		t.Fatalf("LockHolders with the archive locked: %q, %q, %v", held, end2, err)
	}
	if held, end, err := s.WriteBlockers(ctx, q, true, "", before); err != nil || held != "" || end != "" {
		t.Fatalf("the archive locked by a transaction begun after the time asked of: %q, %q, %v; want nothing", held, end, err)
	}
	if held, end, err := s.WriteBlockers(ctx, q, false, store.DLQName(q), time.Now()); err != nil || held != "" || end != "" {
		t.Fatalf("the archive locked, asked of the queue and its DLQ: %q, %q, %v; want nothing", held, end, err)
	}
	for _, bad := range []string{"", `x"; DROP TABLE pgbus.failures; --`, strings.Repeat("q", 1000), "Orders"} {
		if held, _, err := s.WriteBlockers(ctx, bad, true, "", time.Now()); err == nil || held != "" {
			t.Errorf("WriteBlockers(%.40q) = %q, %v; want an error naming the bad queue name", bad, held, err)
		}
	}
}
