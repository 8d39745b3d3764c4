package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// claimedWrite is one of the outcome writes a worker makes for the read it
// ran, returning the ids it wrote.
type claimedWrite func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error)

func claimedWrites() map[string]claimedWrite {
	fail := store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "boom"}
	return map[string]claimedWrite{
		"archive": func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error) {
			return s.ArchiveClaimed(ctx, q, []store.Claim{c})
		},
		"delete": func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error) {
			return s.DeleteClaimed(ctx, q, []store.Claim{c})
		},
		"heartbeat": func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error) {
			return s.SetVisibilityClaimed(ctx, q, []store.Claim{c}, time.Hour)
		},
		"retry": func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error) {
			return s.RetryMany(ctx, q, []store.RetryItem{{MsgID: c.MsgID, Delay: time.Hour, Failure: fail,
				ReadCount: c.ReadCount, EnqueuedAt: c.EnqueuedAt}})
		},
		"snooze": func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error) {
			return s.SnoozeMany(ctx, q, []store.SnoozeItem{{MsgID: c.MsgID, Delay: time.Hour,
				ReadCount: c.ReadCount, EnqueuedAt: c.EnqueuedAt}})
		},
		"discard": func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error) {
			return s.DiscardMany(ctx, q, []store.DiscardItem{{MsgID: c.MsgID, Failure: fail,
				ReadCount: c.ReadCount, EnqueuedAt: c.EnqueuedAt}})
		},
		"dead letter": func(ctx context.Context, s *store.Store, q string, c store.Claim) ([]int64, error) {
			moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{
				MsgID: c.MsgID, Reason: store.ReasonNonRetryable, MaxRetries: 5, Failure: &fail,
				ReadCount: c.ReadCount, EnqueuedAt: c.EnqueuedAt}})
			var ids []int64
			for _, m := range moved {
				ids = append(ids, m.SourceMsgID)
			}
			return ids, err
		},
	}
}

// readOne reads the one visible message of q.
func readOne(t *testing.T, s *store.Store, q string) store.Message {
	t.Helper()
	got, err := s.Read(testContext(t), q, time.Minute, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("read %s: %+v, %v; want one message", q, got, err)
	}
	return got[0]
}

// untouched fails the test unless the message m is in q as its read left
// it, with nothing archived, dead-lettered or recorded as failed.
func untouched(t *testing.T, s *store.Store, q string, m store.Message) {
	t.Helper()
	var reads int
	var vt time.Time
	if err := s.Pool().QueryRow(testContext(t), `SELECT read_ct, vt FROM pgmq."q_`+q+`" WHERE msg_id = $1`, m.ID).Scan(&reads, &vt); err != nil {
		t.Fatalf("message %d is no longer in %s as its read left it: %v", m.ID, q, err)
	}
	if reads != m.ReadCount || !vt.Equal(m.VisibleAt) {
		t.Fatalf("message %d: read_ct %d, vt %s; want read_ct %d, vt %s, as the read that holds it left them", m.ID, reads, vt, m.ReadCount, m.VisibleAt)
	}
	failed := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name IN ($1, $2)`, q, store.DLQName(q))
	if a, d := pgtest.Archived(t, s, q), pgtest.Live(t, s, store.DLQName(q)); a != 0 || d != 0 || failed != 0 {
		t.Fatalf("archived %d, dead %d, failures %d; want none", a, d, failed)
	}
}

// An outcome is written for the read that ran the job, and only while the
// message is still at that read: not once its claim lapsed and another
// read holds it (read_ct moved on), nor on a new message of the same id and
// read count in a queue dropped and made again (enqueued at another time).
func TestOutcomesWriteOnlyTheReadClaimed(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for name, write := range claimedWrites() {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			q := newQueue(t, s)
			if _, err := s.Send(ctx, q, msg(`"old"`)); err != nil {
				t.Fatal(err)
			}
			lapsed := readOne(t, s, q).Claim()
			if _, err := s.SetVisibility(ctx, q, lapsed.MsgID, 0); err != nil {
				t.Fatal(err)
			}
			now := readOne(t, s, q)
			if got, err := write(ctx, s, q, lapsed); err != nil || len(got) != 0 {
				t.Fatalf("write for the lapsed read 1 = %v, %v; want nothing written, no error", got, err)
			}
			untouched(t, s, q, now)
			if got, err := write(ctx, s, q, now.Claim()); err != nil || len(got) != 1 || got[0] != now.ID {
				t.Fatalf("write for read 2, which holds the message = %v, %v; want [%d]", got, err, now.ID)
			}

			if err := s.DropQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			pgtest.RestartIDs(t, s, q)
			if _, err := s.Send(ctx, q, msg(`"new"`)); err != nil {
				t.Fatal(err)
			}
			fresh := readOne(t, s, q)
			if fresh.ID != lapsed.MsgID || fresh.ReadCount != lapsed.ReadCount {
				t.Fatalf("the queue made again holds message %d at read %d; the test wants %d at read %d", fresh.ID, fresh.ReadCount, lapsed.MsgID, lapsed.ReadCount)
			}
			if got, err := write(ctx, s, q, lapsed); err != nil || len(got) != 0 {
				t.Fatalf("write for the dropped queue's message = %v, %v; want nothing written to the new message of its id", got, err)
			}
			untouched(t, s, q, fresh)
		})
	}
}
