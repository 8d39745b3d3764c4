package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// WriteBlockers names the sessions whose table locks keep a queue's
// outcome writes out, on the tables asked about only, with the statement
// that ends them; nothing when no lock is held, and an error for a name
// that is no queue's.
func TestWriteBlockers(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	if held, end, err := s.WriteBlockers(ctx, q, true, store.DLQName(q)); err != nil || held != "" || end != "" {
		t.Fatalf("without locks: %q, %q, %v; want nothing", held, end, err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq."a_`+q+`" IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	held, end, err := s.WriteBlockers(ctx, q, true, "")
	if err != nil || !strings.HasPrefix(held, fmt.Sprintf(`pgmq.a_%s in ShareLock by pid %d (idle in transaction`, q, pid)) ||
		end != fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid) {
		t.Fatalf("with the archive locked: %q, %q, %v; want the lock, its session and the statement that ends it", held, end, err)
	}
	if held, end, err := s.WriteBlockers(ctx, q, false, store.DLQName(q)); err != nil || held != "" || end != "" {
		t.Fatalf("the archive locked, asked of the queue and its DLQ: %q, %q, %v; want nothing", held, end, err)
	}
	for _, bad := range []string{"", `x"; DROP TABLE pgbus.failures; --`, strings.Repeat("q", 1000), "Orders"} {
		if held, _, err := s.WriteBlockers(ctx, bad, true, ""); err == nil || held != "" {
			t.Errorf("WriteBlockers(%.40q) = %q, %v; want an error naming the bad queue name", bad, held, err)
		}
	}
}
