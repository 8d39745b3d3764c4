package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// VacuumQueue vacuums the queue's table, and answers bad and missing
// names with clear errors before anything runs.
func TestVacuumQueue(t *testing.T) {
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	if err := s.BulkSend(ctx, q, 500); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := s.ClaimArchive(ctx, q, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if err := s.VacuumQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var vacuums int64
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(vacuum_count, 0) FROM pg_stat_user_tables
			WHERE schemaname = 'pgmq' AND relname = $1`, "q_"+q).Scan(&vacuums); err != nil {
			t.Fatal(err)
		}
		if vacuums >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no vacuum of the queue table was counted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.VacuumQueue(ctx, "no_such_queue_here"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("vacuum of a missing queue: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "Orders", "x; VACUUM FULL", `a"b`} {
		if err := s.VacuumQueue(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("vacuum of %q: %v, want ErrInvalid", bad, err)
		}
	}
}
