package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

func TestDiscardAndPurgeDead(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	timeouts := deadN(t, s, q, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	bad := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	if n, err := s.DiscardDead(ctx, q, timeouts[:1]); err != nil || n != 1 {
		t.Fatalf("discard one = %d, %v", n, err)
	}
	_, err := s.DiscardDead(ctx, q, timeouts[:1])
	wantErr(t, "discard again", err, store.ErrNotFound, "may have been retried or discarded")
	if n, err := s.DiscardDead(ctx, dlq, []int64{timeouts[1], 999_999}); err != nil || n != 1 {
		t.Fatalf("discard two, one unknown = %d, %v", n, err)
	}
	var lastDone, lastTotal int
	progress := func(done, total int) { lastDone, lastTotal = done, total }
	if n, err := s.DiscardDeadMatching(ctx, store.DeadFilter{Queue: q, ErrorClass: "BadInput"}, 100, progress); err != nil || n != 2 {
		t.Fatalf("discard matching = %d, %v", n, err)
	}
	if lastDone != 2 || lastTotal != 2 {
		t.Fatalf("progress ended at %d of %d, want 2 of 2", lastDone, lastTotal)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."a_`+dlq+`" WHERE headers ? 'pgbus_dead_letter'`); n != 4 {
		t.Fatalf("archive holds %d, want 4", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatalf("DLQ holds %d, want the one left", n)
	}
	// Only the row archived two hours ago is older than an hour.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+dlq+`" SET archived_at = now() - interval '2 hours' WHERE msg_id = $1`, bad[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeDead(ctx, q, time.Hour); err != nil || n != 1 {
		t.Fatalf("purge older than 1h = %d, %v", n, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, dlq, bad[0]); n != 0 {
		t.Fatalf("%d failure rows of the purged message left", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, dlq, bad[1]); n != 1 {
		t.Fatal("failure rows of a message not purged were deleted")
	}
	var calls [][2]int
	purgeProgress := func(done, total int) { calls = append(calls, [2]int{done, total}) }
	if n, err := s.PurgeDead(ctx, dlq, 0, purgeProgress); err != nil || n != 3 {
		t.Fatalf("purge all = %d, %v", n, err)
	}
	// Counted first (0 of 3), then after each batch.
	if len(calls) < 2 || calls[0] != [2]int{0, 3} || calls[len(calls)-1] != [2]int{3, 3} {
		t.Fatalf("purge progress %v, want 0 of 3 first and 3 of 3 last", calls)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatal("purge touched a live DLQ message")
	}
	// Other tests share the database: over every DLQ, purge only what no
	// test can have made.
	if n, err := s.PurgeDead(ctx, "", 100*365*24*time.Hour); err != nil || n != 0 {
		t.Fatalf("purge every DLQ of century-old messages = %d, %v", n, err)
	}
}
