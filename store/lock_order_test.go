package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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
