package store_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue dropped and made again under its name hands out ids after the
// highest the name had, its DLQ's and its levels' too: a new job with an
// old job's id would carry its default idempotency key ("<queue>:<id>"),
// which a downstream that de-duplicates takes for a repeat, and an old
// DLQ id would name another message.
func TestQueueMadeAgainContinuesItsIDs(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dead := deadN(t, s, q, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	sent := sendN(t, s, q, 2)
	levels := uniqueName("lv")
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(ctx, levels) })
	level := store.PriorityQueueName(levels, 1)
	onLevel := sendN(t, s, level, 4)

	for _, name := range []string{q, levels} {
		if err := s.DropQueue(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	if got := sendN(t, s, q, 1)[0]; got <= sent[len(sent)-1] {
		t.Errorf("queue %s made again gave its first message id %d; the old one reached %d", q, got, sent[len(sent)-1])
	}
	if got := deadN(t, s, q, 1, "k", "Timeout", store.ReasonMaxRetriesExceeded)[0]; got <= dead[len(dead)-1] {
		t.Errorf("the DLQ of %s made again gave its first message id %d; the old one reached %d", q, got, dead[len(dead)-1])
	}
	if got := sendN(t, s, level, 1)[0]; got <= onLevel[len(onLevel)-1] {
		t.Errorf("level %s made again gave its first message id %d; the old one reached %d", level, got, onLevel[len(onLevel)-1])
	}
}

// A queue whose tables another client dropped (as pgmq.drop_queue does),
// made again by pgbus, starts after the highest id pgbus's records of its
// messages hold: their failures and idempotency keys.
func TestQueueDroppedOutsideContinuesAfterItsRecords(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	sendN(t, s, q, 5)
	keyed, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), IdempotencyKey: "k-1"})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.DropOutside(t, s, q)
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if got := sendN(t, s, q, 1)[0]; got <= keyed {
		t.Errorf("queue %s made again after a drop outside pgbus gave id %d; its key held id %d", q, got, keyed)
	}
}

func sendN(t *testing.T, s *store.Store, queue string, n int) []int64 {
	t.Helper()
	batch := make([]store.NewMessage, n)
	for i := range batch {
		batch[i] = store.NewMessage{Payload: json.RawMessage(`{}`)}
	}
	ids, err := s.SendBatch(testContext(t), queue, batch)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
