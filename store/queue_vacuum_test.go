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
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	if err := s.BulkSend(ctx, q, 500); err != nil {
		t.Fatal(err)
	}
	drainByClaims(t, s, q)
	if err := s.VacuumQueue(ctx, q, false); err != nil {
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
	if err := s.VacuumQueue(ctx, "no_such_queue_here", false); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("vacuum of a missing queue: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "Orders", "x; VACUUM FULL", `a"b`} {
		if err := s.VacuumQueue(ctx, bad, false); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("vacuum of %q: %v, want ErrInvalid", bad, err)
		}
	}
}

// A plain vacuum keeps the table's size for reuse; a shrinking one
// truncates a table left empty, indexes included, and message ids go on
// from where they were; a table still holding messages keeps them.
func TestVacuumQueueShrinks(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	if err := s.BulkSend(ctx, q, 3000); err != nil {
		t.Fatal(err)
	}
	var lastID int64
	if err := s.Pool().QueryRow(ctx, `SELECT max(msg_id) FROM pgmq."q_`+q+`"`).Scan(&lastID); err != nil {
		t.Fatal(err)
	}
	drainByClaims(t, s, q)
	size := func() (heap, total int64) {
		t.Helper()
		if err := s.Pool().QueryRow(ctx, `SELECT pg_relation_size(c.oid), pg_total_relation_size(c.oid)
			FROM pg_class c WHERE c.oid = $1::regclass`, `pgmq."q_`+q+`"`).Scan(&heap, &total); err != nil {
			t.Fatal(err)
		}
		return heap, total
	}
	heapBefore, totalBefore := size()
	if err := s.VacuumQueue(ctx, q, false); err != nil {
		t.Fatal(err)
	}
	if heap, _ := size(); heap != heapBefore || heap == 0 {
		t.Errorf("a plain vacuum changed the table's size from %d to %d bytes; it should keep it for reuse", heapBefore, heap)
	}
	if err := s.VacuumQueue(ctx, q, true); err != nil {
		t.Fatal(err)
	}
	heap, total := size()
	if heap != 0 || total >= totalBefore/4 {
		t.Errorf("after a shrinking vacuum of the empty table: %d bytes of table, %d with indexes (before: %d), want 0 and far less", heap, total, totalBefore)
	}
	id, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{"after":"shrink"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if id <= lastID {
		t.Errorf("a message sent after the shrink got id %d, not above the %d sent before", id, lastID)
	}
	if err := s.VacuumQueue(ctx, q, true); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1`, id).Scan(&left); err != nil || left != 1 {
		t.Errorf("the message sent after the shrink is gone after a shrink of a non-empty table: %d, %v", left, err)
	}
}

func drainByClaims(t *testing.T, s *store.Store, q string) {
	t.Helper()
	for {
		n, err := s.ClaimArchive(testContext(t), q, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}
