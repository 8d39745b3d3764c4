package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// deadRowsAndCount reads, in one statement and so in one snapshot, how many
// rows dlq holds and what its group counts add up to.
func deadRowsAndCount(ctx context.Context, s *store.Store, dlq string) (rows, counted int64, err error) {
	err = s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM pgmq."q_`+dlq+`"),
		(SELECT coalesce(sum(count), 0)::bigint FROM pgbus.dlq_group_counts WHERE dlq = $1)`, dlq).Scan(&rows, &counted)
	return rows, counted, err
}

// Many connections dead-letter into one group of one DLQ while others
// retry out of it and fold its counts: writers append deltas and never
// wait for one another, and the counts equal the DLQ's rows in every
// snapshot, before a fold, during one and after.
func TestDeadGroupsHotGroupStayExact(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	kind := uniqueName("hot")
	const writers, rounds, batch = 8, 30, 4
	errs := make(chan error, writers+8)
	var writing, others sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			for r := range rounds {
				msgs := make([]store.NewMessage, batch)
				for i := range msgs {
					msgs[i] = store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(fmt.Sprintf(`{"pgbus_kind":%q}`, kind))}
				}
				ids, err := s.SendBatch(ctx, q, msgs)
				if err != nil {
					errs <- err
					return
				}
				items := make([]store.DeadLetterItem, len(ids))
				for i, id := range ids {
					// One group: the same kind, class, message and reason.
					items[i] = store.DeadLetterItem{MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3,
						Failure: &store.Failure{Attempt: 3, ErrorClass: "Hot", ErrorMessage: "the same failure"}}
				}
				if _, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, items); err != nil {
					errs <- fmt.Errorf("writer %d round %d: %w", w, r, err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	stopped := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	retried := make(chan int, 2)
	for range 2 {
		others.Go(func() {
			n := 0
			defer func() { retried <- n }()
			for !stopped() {
				page, err := s.ListDead(ctx, store.DeadFilter{Queue: q}, "", 3)
				if err != nil {
					errs <- err
					return
				}
				ids := make([]int64, 0, len(page.Items))
				for _, it := range page.Items {
					ids = append(ids, it.MsgID)
				}
				if len(ids) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				// The other retrier may have taken some: those are reported
				// as gone, and only a batch failing as a whole is an error.
				rep, err := s.RetryDead(ctx, q, ids, store.RetryOptions{})
				if err != nil && len(ids) > 1 {
					errs <- fmt.Errorf("retry: %w", err)
					return
				}
				n += len(rep.Moved)
			}
		})
	}
	folds := 0
	others.Go(func() {
		for !stopped() {
			if _, err := s.FoldDeadCounts(ctx); err != nil {
				errs <- err
				return
			}
			folds++
		}
	})
	checks := 0
	others.Go(func() {
		for !stopped() {
			rows, counted, err := deadRowsAndCount(ctx, s, dlq)
			if err != nil {
				errs <- err
				return
			}
			if rows != counted {
				errs <- fmt.Errorf("check %d: the DLQ holds %d rows, its group counts say %d", checks, rows, counted)
				return
			}
			checks++
		}
	})
	writing.Wait()
	close(done)
	others.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	moved := <-retried + <-retried
	dead := int64(dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`))
	if moved == 0 || dead == 0 || dead+int64(moved) != writers*rounds*batch || folds == 0 || checks == 0 {
		t.Fatalf("dead %d + retried %d, want %d in all and some of each; %d folds, %d checks", dead, moved, writers*rounds*batch, folds, checks)
	}
	for _, step := range []string{"after the writers", "after a fold"} {
		gs := checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, step)
		if len(gs) != 1 || gs[0].Count != dead {
			t.Fatalf("%s: summary:%s\nwant one group of %d", step, dumpGroups(gs), dead)
		}
		if d := dlqDepth(t, s, q); d != dead {
			t.Fatalf("%s: DLQ depth %d, want %d", step, d, dead)
		}
		if _, err := s.FoldDeadCounts(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_deltas WHERE dlq = $1`, dlq); n != 0 {
		t.Fatalf("%d deltas left after a fold", n)
	}
	if n := dlCount(t, s, `SELECT count::int FROM pgbus.dlq_groups WHERE dlq = $1`, dlq); int64(n) != dead {
		t.Fatalf("the folded base row counts %d, want %d", n, dead)
	}
}

// A fold of nothing pending folds nothing, and a fold that brings a group
// to zero removes its base row.
func TestFoldDeadCounts(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 3, "k", "E", store.ReasonNonRetryable)
	if _, err := s.FoldDeadCounts(ctx); err != nil {
		t.Fatal(err)
	}
	var folded int64
	if err := s.Pool().QueryRow(ctx, `SELECT pgbus.dlq_groups_fold($1)`, dlq).Scan(&folded); err != nil || folded != 0 {
		t.Fatalf("a second fold = %d, %v; want nothing left to fold", folded, err)
	}
	if n := dlCount(t, s, `SELECT count::int FROM pgbus.dlq_groups WHERE dlq = $1`, dlq); n != 3 {
		t.Fatalf("the base row counts %d after the fold, want 3", n)
	}
	// Holding the DLQ's fold lock keeps the discard's deltas pending,
	// whatever other tests' retention passes fold meanwhile.
	hold, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx) //nolint:errcheck
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_xact_lock(pgbus.dlq_groups_lock_key($1))`, dlq); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DiscardDead(ctx, q, ids); err != nil {
		t.Fatal(err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq); n != 0 {
		t.Fatalf("%d groups counted for an empty DLQ before the fold", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_deltas WHERE dlq = $1`, dlq); n < 1 {
		t.Fatalf("the discard left %d deltas to fold, want some", n)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `SELECT pgbus.dlq_groups_fold($1)`, dlq); err != nil {
		t.Fatal(err)
	}
	if n := dlCount(t, s, `SELECT (SELECT count(*) FROM pgbus.dlq_groups WHERE dlq = $1) + (SELECT count(*) FROM pgbus.dlq_group_deltas WHERE dlq = $1)`, dlq); n != 0 {
		t.Fatalf("%d base and delta rows left for an empty DLQ after the fold", n)
	}
}

// Migration 0013 keeps the counts 0012 kept, as the base of the deltas
// written from then on.
func TestMigrationKeepsDLQCounts(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, all := storeAtVersion(t, 12)
	q := uniqueName("old")
	dlq := store.DLQName(q)
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	deadAsAnOldVersion(t, s, q, "k", []string{"order 1 failed", "order 2 failed", "card declined"})
	if n := dlCount(t, s, `SELECT sum(count)::int FROM pgbus.dlq_groups WHERE dlq = $1`, dlq); n != 3 {
		t.Fatalf("before 0013: pgbus.dlq_groups counts %d messages, want 3", n)
	}
	if st, err := s.Migrate(ctx); err != nil || st.Applied != len(all)-12 {
		t.Fatalf("migrate = %+v, %v", st, err)
	}
	gs := checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after 0013")
	if len(gs) != 2 || gs[0].Count != 2 {
		t.Fatalf("summary after 0013:%s\nwant 2 of order <n> failed, 1 of card declined", dumpGroups(gs))
	}
	// Folds take the DLQ's advisory lock: holding it keeps the deltas in
	// place to be counted, whatever folds other tests' retention passes or
	// the one-in-64 writer run meanwhile.
	hold, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx) //nolint:errcheck
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_xact_lock(pgbus.dlq_groups_lock_key($1))`, dlq); err != nil {
		t.Fatal(err)
	}
	deadN(t, s, q, 4, "k", "Failed", store.ReasonMaxRetriesExceeded)
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_deltas WHERE dlq = $1`, dlq); n < 1 {
		t.Fatalf("dead-lettering under 0013 wrote %d deltas, want some", n)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after dead-lettering under 0013")
	if _, err := s.FoldDeadCounts(ctx); err != nil {
		t.Fatal(err)
	}
	checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after a fold")
}
