package store_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// liveStates returns the state ListLive gives each message of queue, and
// the stats of queue.
func liveStates(t *testing.T, s *store.Store, queue string) (map[int64]string, store.QueueStats) {
	t.Helper()
	ctx := testContext(t)
	page, err := s.ListLive(ctx, store.LiveFilter{Queue: queue}, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	states := map[int64]string{}
	for _, it := range page.Items {
		states[it.MsgID] = it.State
	}
	stats, err := s.QueueStats(ctx, queue, store.QueueStatsOptions{})
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats of %s = %+v, %v", queue, stats, err)
	}
	return states, stats[0]
}

// A message retried out of its DLQ starts its attempts again at 1, and the
// failures of its previous trip, which come with it, say nothing of the
// attempt it is on: while it runs it is in flight, and once its new attempt
// fails it is retrying, as a message that never died.
func TestLiveStateOfMessageRetriedFromDLQ(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{"n":1}`)}, {Payload: json.RawMessage(`{"n":2}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read = %v, %v", got, err)
	}
	// ids[1] fails its first attempt and waits to retry; ids[0] fails its
	// first attempt and dies.
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "first"}}}); err != nil {
		t.Fatal(err)
	}
	moved, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, []store.DeadLetterItem{{MsgID: ids[0], Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 0,
		Failure: &store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "old trip"}}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter = %v, %v", moved, err)
	}
	rep, err := s.RetryDead(ctx, dlq, []int64{moved[0].DLQMsgID}, store.RetryOptions{})
	if err != nil || len(rep.Moved) != 1 {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	back := rep.Moved[0].MsgID
	if got, err := s.Read(ctx, q, time.Hour, 1); err != nil || len(got) != 1 || got[0].ID != back || got[0].ReadCount != 1 {
		t.Fatalf("read of the retried message = %+v, %v", got, err)
	}
	states, stats := liveStates(t, s, q)
	if states[back] != store.StateInFlight || states[ids[1]] != store.StateRetrying || stats.InFlight != 1 || stats.WaitingRetry != 1 {
		t.Fatalf("while the retried message runs: states %v (want %d in_flight, %d retrying), stats %+v (want 1 in flight, 1 retrying)", states, back, ids[1], stats)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: back, Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "new trip"}}}); err != nil {
		t.Fatal(err)
	}
	states, stats = liveStates(t, s, q)
	if states[back] != store.StateRetrying || states[ids[1]] != store.StateRetrying || stats.InFlight != 0 || stats.WaitingRetry != 2 {
		t.Fatalf("once the retried message failed again: states %v (want both retrying), stats %+v (want 2 retrying)", states, stats)
	}
}

// A cursor of live messages is a position in one queue's messages, of one
// state: with another queue or state it is refused, saying to start again,
// and with its own it goes on to the next page.
func TestLiveCursorIsBoundToQueueAndState(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	a, b := newQueue(t, s), newQueue(t, s)
	for _, q := range []string{a, b} {
		if _, err := s.SendBatch(ctx, q, msgs(3)); err != nil {
			t.Fatal(err)
		}
	}
	f := store.LiveFilter{Queue: a}
	first, err := s.ListLive(ctx, f, "", 1)
	if err != nil || len(first.Items) != 1 || first.NextCursor == "" {
		t.Fatalf("first page = %+v, %v", first, err)
	}
	if len(first.NextCursor) > 32 {
		t.Errorf("cursor %q is %d characters long; want a short one", first.NextCursor, len(first.NextCursor))
	}
	for what, other := range map[string]store.LiveFilter{
		"another queue":            {Queue: b},
		"another state":            {Queue: a, State: store.StateWaiting},
		"another queue and state":  {Queue: b, State: store.StateWaiting},
		"another queue, its state": {Queue: b, State: f.State},
	} {
		_, err := s.ListLive(ctx, other, first.NextCursor, 1)
		wantErr(t, what, err, store.ErrInvalid, "start again without cursor")
	}
	next, err := s.ListLive(ctx, f, first.NextCursor, 10)
	if err != nil || len(next.Items) != 2 || next.Items[0].MsgID <= first.Items[0].MsgID {
		t.Fatalf("next page = %+v, %v; want the 2 messages after the first", next, err)
	}
	waiting, err := s.ListLive(ctx, store.LiveFilter{Queue: a, State: store.StateWaiting}, "", 1)
	if err != nil || waiting.NextCursor == "" {
		t.Fatalf("first page of waiting messages = %+v, %v", waiting, err)
	}
	if _, err := s.ListLive(ctx, f, waiting.NextCursor, 1); err == nil {
		t.Error("a cursor of waiting messages was taken for all messages")
	}
	if next, err := s.ListLive(ctx, store.LiveFilter{Queue: a, State: store.StateWaiting}, waiting.NextCursor, 10); err != nil || len(next.Items) != 2 {
		t.Fatalf("next page of waiting messages = %+v, %v", next, err)
	}
}

// Each state lists exactly the messages of that state, in order, as the
// listing of all of them names them: the waiting ones on one side of the
// visibility timeout, the scheduled, in flight and retrying on the other.
func TestListLiveByState(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	var ids []int64
	for i, delay := range []time.Duration{0, 0, 0, time.Hour, 0, 0} {
		id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Delay: delay})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// ids[0] and ids[1] are read; ids[1] fails and waits to retry. ids[3]
	// is scheduled; the rest wait.
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read = %v, %v", got, err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "boom"}}}); err != nil {
		t.Fatal(err)
	}
	all, _ := liveStates(t, s, q)
	want := map[string][]int64{
		store.StateInFlight:  {ids[0]},
		store.StateRetrying:  {ids[1]},
		store.StateScheduled: {ids[3]},
		store.StateWaiting:   {ids[2], ids[4], ids[5]},
	}
	for state, wantIDs := range want {
		for _, id := range wantIDs {
			if all[id] != state {
				t.Fatalf("unfiltered listing: message %d is %q, want %q (all: %v)", id, all[id], state, all)
			}
		}
		page, err := s.ListLive(ctx, store.LiveFilter{Queue: q, State: state}, "", 100)
		if err != nil {
			t.Fatalf("list %s: %v", state, err)
		}
		var got []int64
		for _, it := range page.Items {
			got = append(got, it.MsgID)
			if it.State != state {
				t.Errorf("list %s: message %d is %q", state, it.MsgID, it.State)
			}
		}
		if !slices.Equal(got, wantIDs) {
			t.Errorf("list %s = %v, want %v", state, got, wantIDs)
		}
	}
}
