package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// BulkSend queues n visible messages {"n": 1..n}; CountDone then finds
// them in the archive and the DLQ, and a message archived twice would show
// as more rows than distinct messages.
func TestBulkSendAndCountDone(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	if err := s.BulkSend(ctx, q, 5); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Read(ctx, q, time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, m := range msgs {
		var p struct{ N int }
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			t.Fatalf("payload %s: %v", m.Payload, err)
		}
		seen[p.N] = true
	}
	if len(msgs) != 5 || len(seen) != 5 || !seen[1] || !seen[5] {
		t.Fatalf("read %d messages with payloads n %v; want 5 visible messages n = 1..5", len(msgs), seen)
	}
	for _, m := range msgs[:4] {
		if ok, err := s.Archive(ctx, q, m.ID); err != nil || !ok {
			t.Fatalf("archive %d: %v %v", m.ID, ok, err)
		}
	}
	pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{})
	got, err := s.CountDone(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.DoneCounts{Archived: 4, DeadLettered: 1, Distinct: 5}); got != want {
		t.Fatalf("CountDone = %+v, want %+v", got, want)
	}
}

func TestBulkSendBadInput(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	for _, n := range []int{0, -1, store.MaxBulkSend + 1} {
		if err := s.BulkSend(ctx, q, n); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("BulkSend of %d: %v, want ErrInvalid", n, err)
		}
	}
	if err := s.BulkSend(ctx, "no_such_queue_here", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("BulkSend to a missing queue: %v, want ErrNotFound", err)
	}
	if _, err := s.CountDone(ctx, "no_such_queue_here"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CountDone of a missing queue: %v, want ErrNotFound", err)
	}
	if _, err := s.QueueTableStats(ctx, "no_such_queue_here"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("QueueTableStats of a missing queue: %v, want ErrNotFound", err)
	}
	for _, n := range []int{0, -1, store.MaxBatch + 1} {
		if _, err := s.ClaimArchive(ctx, q, n); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ClaimArchive of %d: %v, want ErrInvalid", n, err)
		}
	}
	if _, err := s.ClaimArchive(ctx, "no_such_queue_here", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClaimArchive of a missing queue: %v, want ErrNotFound", err)
	}
	if _, err := s.ClaimArchive(ctx, "x'; DROP TABLE pgmq.meta; --", 1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ClaimArchive of an injected name: %v, want ErrInvalid", err)
	}
}

// ClaimArchive moves visible messages to the archive in order, a batch
// at a time, and leaves invisible ones.
func TestClaimArchive(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	if err := s.BulkSend(ctx, q, 250); err != nil {
		t.Fatal(err)
	}
	hidden, err := s.Read(ctx, q, time.Hour, 1) // message 1, invisible for an hour
	if err != nil || len(hidden) != 1 {
		t.Fatalf("read = %v, %v", hidden, err)
	}
	var moved []int
	for {
		n, err := s.ClaimArchive(ctx, q, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		moved = append(moved, n)
	}
	if !slices.Equal(moved, []int{100, 100, 49}) {
		t.Fatalf("batches moved %v, want 100, 100, 49", moved)
	}
	var archived, left, leftID int64
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM pgmq."a_`+q+`"), (SELECT count(*) FROM pgmq."q_`+q+`"), (SELECT min(msg_id) FROM pgmq."q_`+q+`")`).Scan(&archived, &left, &leftID); err != nil {
		t.Fatal(err)
	}
	if archived != 249 || left != 1 || leftID != hidden[0].ID {
		t.Fatalf("%d archived, %d left (message %d); want 249 archived and the invisible message %d left", archived, left, leftID, hidden[0].ID)
	}
}

// QueueTableStats names the queue's table, archive and DLQ in that order,
// and its counts follow the writes once the statistics catch up.
func TestQueueTableStats(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	if err := s.BulkSend(ctx, q, 10); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Read(ctx, q, time.Minute, 3)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("read: %d messages, %v", len(msgs), err)
	}
	for _, m := range msgs {
		if _, err := s.Archive(ctx, q, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	var stats []store.TableStats
	pgtest.Eventually(t, time.Minute, "statistics of 10 sends and 3 archives", func() bool {
		stats, err = s.QueueTableStats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return stats[0].Inserted == 10 && stats[0].Deleted == 3 && stats[1].Inserted == 3
	})
	want := []string{"pgmq.q_" + q, "pgmq.a_" + q, "pgmq.q_" + store.DLQName(q)}
	for i, st := range stats {
		if st.Table != want[i] || st.TotalBytes <= 0 {
			t.Errorf("table %d: %+v, want %s with a positive size", i, st, want[i])
		}
	}
	if stats[0].LiveTuples != 7 || stats[1].LiveTuples != 3 || stats[2].LiveTuples != 0 {
		t.Errorf("live tuples %d, %d, %d; want 7 queued, 3 archived, 0 dead", stats[0].LiveTuples, stats[1].LiveTuples, stats[2].LiveTuples)
	}
	// Reading updates a row (read_ct, vt) and archiving deletes it: both
	// leave dead tuples until vacuum.
	if stats[0].DeadTuples < 3 && stats[0].Autovacuums == 0 {
		t.Errorf("queue table has %d dead tuples and was never vacuumed; want at least the 3 archived", stats[0].DeadTuples)
	}
}
