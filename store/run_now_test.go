package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// RunNow makes exactly the messages waiting out a retry's backoff visible
// (a dry run only counts them); a message in flight, one scheduled and
// one waiting keep their times, and a second call finds none left.
func TestRunNowTakesOnlyRetrying(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	var ids []int64
	for _, delay := range []time.Duration{0, 0, 0, time.Hour} {
		id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: delay})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// ids[0] is in flight, ids[1] failed and waits an hour to retry,
	// ids[2] waits, ids[3] is scheduled.
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read = %v, %v", got, err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "boom"}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{DryRun: true}); err != nil || n != 1 {
		t.Fatalf("dry run = %d, %v; want the 1 retrying", n, err)
	}
	if states, _ := liveStates(t, s, q); states[ids[1]] != store.StateRetrying {
		t.Fatalf("after a dry run: %v; want message %d still retrying", states, ids[1])
	}
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{}); err != nil || n != 1 {
		t.Fatalf("run now = %d, %v; want the 1 retrying", n, err)
	}
	states, _ := liveStates(t, s, q)
	want := map[int64]string{ids[0]: store.StateInFlight, ids[1]: store.StateWaiting, ids[2]: store.StateWaiting, ids[3]: store.StateScheduled}
	for id, state := range want {
		if states[id] != state {
			t.Errorf("after run now: message %d is %q, want %q (all: %v)", id, states[id], state, states)
		}
	}
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{}); err != nil || n != 0 {
		t.Fatalf("run now again = %d, %v; want none left", n, err)
	}
	got, err := s.Read(ctx, q, time.Minute, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("a read after run now got %d messages (%v); want the one run now and the one waiting", len(got), err)
	}
}

// RunNow covers every priority level of a queue, and names a queue that
// does not exist.
func TestRunNowEveryLevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	_, err := s.RunNow(ctx, q+"_none", store.RunNowOptions{})
	wantErr(t, "unknown queue", err, store.ErrNotFound, "does not exist")
	levels := pgtest.Name("runnow")
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), levels) })
	for level := range 2 {
		pgtest.Retrying(t, s, store.PriorityQueueName(levels, level))
	}
	if n, err := s.RunNow(ctx, levels, store.RunNowOptions{}); err != nil || n != 2 {
		t.Fatalf("run now of a queue with 2 levels = %d, %v; want a message of each", n, err)
	}
}

// RunNow with a kind takes only that kind's retrying messages: the
// pgbus_kind header's, or a Ruby pgbus payload's job_class; messages of
// other kinds, of none, or with headers that are not an object keep
// waiting.
func TestRunNowOfOneKind(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	send := func(payload, headers string) int64 {
		return pgtest.RetryingMessage(t, s, q, store.NewMessage{Payload: json.RawMessage(payload), Headers: json.RawMessage(headers)})
	}
	mail := send(`{}`, `{"pgbus_kind": "mail"}`)
	ruby := send(`{"job_class": "mail"}`, ``)
	other := send(`{}`, `{"pgbus_kind": "sms"}`)
	none := send(`{}`, ``)
	odd := send(`{}`, `{"pgbus_kind": "later"}`)
	// Another PGMQ client may write headers that are not an object.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" SET headers = '["mail"]' WHERE msg_id = $1`, odd); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{Kind: "mail", DryRun: true}); err != nil || n != 2 {
		t.Fatalf("dry run of kind mail = %d, %v; want 2", n, err)
	}
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{Kind: "mail'; DELETE FROM pgmq.meta; --"}); err != nil || n != 0 {
		t.Fatalf("run now of a kind holding SQL = %d, %v; want none, as a kind", n, err)
	}
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{Kind: "mail"}); err != nil || n != 2 {
		t.Fatalf("run now of kind mail = %d, %v; want 2", n, err)
	}
	states, _ := liveStates(t, s, q)
	want := map[int64]string{mail: store.StateWaiting, ruby: store.StateWaiting, other: store.StateRetrying, none: store.StateRetrying, odd: store.StateRetrying}
	for id, state := range want {
		if states[id] != state {
			t.Errorf("after run now of kind mail: message %d is %q, want %q (all: %v)", id, states[id], state, states)
		}
	}
}

// RunNow goes through a level in batches: every retrying message is made
// visible however many batches it takes, messages scheduled among them
// keep their times, and one a worker holds meanwhile is passed over, not
// waited for, and taken by the next call. Not parallel: it changes the
// batch size.
func TestRunNowInBatches(t *testing.T) {
	store.SetRunNowBatch(t, 4)
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	var retrying, scheduled []int64
	for i := range 11 {
		retrying = append(retrying, pgtest.Retrying(t, s, q))
		if i%3 == 0 {
			id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: 30 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			scheduled = append(scheduled, id)
		}
	}
	held := retrying[5]
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM pgmq."q_`+q+`" WHERE msg_id = $1 FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{}); err != nil || n != 10 {
		t.Fatalf("run now in batches of 4 = %d, %v; want the 10 retrying messages not held", n, err)
	}
	states, _ := liveStates(t, s, q)
	for _, id := range retrying {
		if want := store.StateWaiting; id != held && states[id] != want {
			t.Errorf("message %d is %q after run now, want %q", id, states[id], want)
		}
	}
	for _, id := range scheduled {
		if states[id] != store.StateScheduled {
			t.Errorf("scheduled message %d is %q after run now, want it scheduled still", id, states[id])
		}
	}
	_ = tx.Rollback(ctx)
	if n, err := s.RunNow(ctx, q, store.RunNowOptions{}); err != nil || n != 1 {
		t.Fatalf("run now once the held message is free = %d, %v; want it", n, err)
	}
}

// RunNow tells its progress after each batch, counted across the levels
// of a queue with priority levels, and a call stopped after a batch
// returns what it made visible, which stays so, the rest still retrying
// for the next call. Not parallel: it changes the batch size.
func TestRunNowProgressAndStop(t *testing.T) {
	store.SetRunNowBatch(t, 2)
	s := testStore(t)
	ctx := testContext(t)
	levels := pgtest.Name("runnow")
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), levels) })
	for level := range 2 {
		for range 3 {
			pgtest.Retrying(t, s, store.PriorityQueueName(levels, level))
		}
	}
	var told []int64
	n, err := s.RunNow(ctx, levels, store.RunNowOptions{Progress: func(done int64) { told = append(told, done) }})
	if err != nil || n != 6 || !slices.Equal(told, []int64{2, 3, 5, 6}) {
		t.Fatalf("run now = %d, %v, progress %v; want 6, told after each batch of each level: [2 3 5 6]", n, err, told)
	}

	q := newQueue(t, s)
	for range 5 {
		pgtest.Retrying(t, s, q)
	}
	stopped, cancel := context.WithCancel(ctx)
	defer cancel()
	n, err = s.RunNow(stopped, q, store.RunNowOptions{Progress: func(int64) { cancel() }})
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Fatalf("run now stopped after its first batch = %d, %v; want 2 and the cancellation", n, err)
	}
	if left, err := s.RunNow(ctx, q, store.RunNowOptions{DryRun: true}); err != nil || left != 3 {
		t.Fatalf("retrying after the stopped call = %d, %v; want the 3 its first batch left", left, err)
	}
}
