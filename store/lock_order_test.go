package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// batchWrite is one of the store's writes to a batch of messages of a queue.
type batchWrite func(ctx context.Context, s *store.Store, q string, ids []int64) error

var (
	setVisibility batchWrite = func(ctx context.Context, s *store.Store, q string, ids []int64) error {
		_, err := s.SetVisibilityMany(ctx, q, ids, time.Minute)
		return err
	}
	archive batchWrite = func(ctx context.Context, s *store.Store, q string, ids []int64) error {
		_, err := s.ArchiveMany(ctx, q, ids)
		return err
	}
	deleteMsgs batchWrite = func(ctx context.Context, s *store.Store, q string, ids []int64) error {
		_, err := s.DeleteMany(ctx, q, ids)
		return err
	}
	snooze batchWrite = func(ctx context.Context, s *store.Store, q string, ids []int64) error {
		items := make([]store.SnoozeItem, len(ids))
		for i, id := range ids {
			items[i] = store.SnoozeItem{MsgID: id, Delay: time.Minute}
		}
		_, err := s.SnoozeMany(ctx, q, items)
		return err
	}
	retry batchWrite = func(ctx context.Context, s *store.Store, q string, ids []int64) error {
		items := make([]store.RetryItem, len(ids))
		for i, id := range ids {
			items[i] = store.RetryItem{MsgID: id, Delay: time.Minute, Failure: store.Failure{Attempt: 1, Kind: "k", ErrorClass: "E", ErrorMessage: "failed"}}
		}
		_, err := s.RetryMany(ctx, q, items)
		return err
	}
	discard batchWrite = func(ctx context.Context, s *store.Store, q string, ids []int64) error {
		items := make([]store.DiscardItem, len(ids))
		for i, id := range ids {
			items[i] = store.DiscardItem{MsgID: id, Failure: store.Failure{Attempt: 1, Kind: "k", ErrorClass: "E", ErrorMessage: "failed"}}
		}
		_, err := s.DiscardMany(ctx, q, items)
		return err
	}
	deadLetter batchWrite = func(ctx context.Context, s *store.Store, q string, ids []int64) error {
		items := make([]store.DeadLetterItem, len(ids))
		for i, id := range ids {
			items[i] = store.DeadLetterItem{MsgID: id, Reason: store.ReasonNonRetryable}
		}
		_, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, items)
		return err
	}
)

// TestBatchWritesDoNotDeadlock runs two of the store's writes to the same
// messages at once, one given the ids ascending and the other descending,
// as a worker's heartbeat and its outcomes meet in a busy queue: each
// write locks its rows in one order whatever the order it is given, so
// the two wait for each other rather than deadlock. The writes are not
// run again on a conflict, which would hide it.
func TestBatchWritesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	pairs := []struct {
		name string
		a, b batchWrite
	}{
		{"visibility and archive", setVisibility, archive},
		{"snooze and delete", snooze, deleteMsgs},
		{"retry and dead-letter", retry, deadLetter},
		{"discard and visibility", discard, setVisibility},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			s := testStore(t)
			ctx := store.WithoutConflictRetries(testContext(t))
			q := newQueue(t, s)
			// Other messages, as in a busy queue, so that the writes find
			// their rows through the primary key, in the order they name
			// them, as they do there.
			for range 4 {
				if _, err := s.SendBatch(ctx, q, delayed(msgs(5000), time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 200 {
				asc, err := s.SendBatch(ctx, q, msgs(50))
				if err != nil {
					t.Fatal(err)
				}
				desc := slices.Clone(asc)
				slices.Reverse(desc)
				var errs [2]error
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i, w := range []struct {
					write batchWrite
					ids   []int64
				}{{p.a, asc}, {p.b, desc}} {
					wg.Go(func() {
						<-start
						errs[i] = w.write(ctx, s, q, w.ids)
					})
				}
				close(start)
				wg.Wait()
				for _, err := range errs {
					var pgErr *pgconn.PgError
					if errors.As(err, &pgErr) && pgErr.Code == "40P01" {
						t.Fatalf("round %d: the two writes deadlocked: %v", round, err)
					}
					if err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
				}
			}
		})
	}
}

func delayed(ms []store.NewMessage, d time.Duration) []store.NewMessage {
	for i := range ms {
		ms[i].Delay = d
	}
	return ms
}

// rowLockedByABatch begins a transaction that locks message id of queue
// q as a worker's batch write locks the first of its rows (FOR UPDATE
// before a delete), and returns the transaction and its backend pid; it
// is rolled back at the end of the test if not before.
func rowLockedByABatch(t *testing.T, s *store.Store, q string, id int64) (pgx.Tx, int) {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+queueTableOf(q)+` WHERE msg_id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}

// takeNextRow takes, in the transaction of rowLockedByABatch, the row
// of message id, as the worker's batch goes on in msg_id order. It does
// not wait: a write under way that holds the row while it waits for the
// batch's first one would deadlock with the batch, and fails the test.
func takeNextRow(t *testing.T, tx pgx.Tx, q string, first, id int64, what string) {
	t.Helper()
	if _, err := tx.Exec(testContext(t), `SELECT 1 FROM `+queueTableOf(q)+` WHERE msg_id = $1 FOR UPDATE NOWAIT`, id); err != nil {
		t.Errorf("%s holds message %d while it waits for message %d, which a worker's batch that locks in msg_id order holds: the two would deadlock (%v)", what, id, first, err)
	}
}

// scanOrder is the ids of queue q in the order of their rows in its table,
// the order a write that scans the table meets them.
func scanOrder(t *testing.T, s *store.Store, q string) []int64 {
	t.Helper()
	var ids []int64
	if err := s.Pool().QueryRow(testContext(t), `SELECT array_agg(msg_id ORDER BY ctid) FROM `+queueTableOf(q)).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	return ids
}

func queueTableOf(q string) string { return pgx.Identifier{"pgmq", "q_" + q}.Sanitize() }

// Bringing in the jobs a breaker holds, as an opening by hand that cuts
// its period short does, locks their rows in msg_id order, not in the
// order it finds them by their visibility time or in the table.
func TestCapHoldsLocksInOrder(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	h := holdTest{t: t, s: s, q: newQueue(t, s)}
	b := pgtest.Name("pay")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: b, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.OpenBreaker(ctx, b, store.BreakerOpening{For: 24 * time.Hour, By: "cli"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, b, []store.BreakerUser{{Queue: h.q}}); err != nil {
		t.Fatal(err)
	}
	var read []store.Message
	for range 3 {
		read = append(read, h.readSent(store.NewMessage{}))
	}
	// Held last to first, each less long than the one before: by time
	// and in the table alike, the first message comes last.
	for i := len(read) - 1; i >= 0; i-- {
		h.snooze(read[i], 24*time.Hour-time.Duration(len(read)-1-i)*time.Minute, b)
	}
	ids := []int64{read[0].ID, read[1].ID, read[2].ID}
	if got := scanOrder(t, s, h.q); !slices.Equal(got, []int64{ids[2], ids[1], ids[0]}) {
		t.Fatalf("the table holds the messages in the order %v, want the first last", got)
	}
	tx, pid := rowLockedByABatch(t, s, h.q, ids[0])
	type result struct {
		until time.Time
		err   error
	}
	done := make(chan result, 1)
	go func() {
		_, until, err := s.OpenBreaker(ctx, b, store.BreakerOpening{For: time.Hour, By: "cli", Reason: "shorter"})
		done <- result{until, err}
	}()
	pgtest.Eventually(t, time.Minute, "the opening to wait for the batch's row", func() bool { return waitsForARowOf(t, s, pid) })
	takeNextRow(t, tx, h.q, ids[0], ids[2], "bringing the holds in")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	for id, m := range h.live() {
		if m.VisibleAt.After(r.until) {
			t.Errorf("message %d waits until %v, after the opening's end %v", id, m.VisibleAt, r.until)
		}
	}
}
