package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// payloadOf reads the payload of message id of a physical queue.
func payloadOf(t *testing.T, s *store.Store, physical string, id int64) string {
	t.Helper()
	var p string
	if err := s.Pool().QueryRow(testContext(t), `SELECT message::text FROM pgmq."q_`+physical+`" WHERE msg_id = $1`, id).Scan(&p); err != nil {
		t.Fatalf("message %d of %s: %v", id, physical, err)
	}
	return p
}

// SendBatch commits a batch in a transaction of its own and returns the
// ids in the batch's order, each naming its own message.
func TestSendBatchReturnsIdsInOrder(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)

	msgs := make([]engine.BatchMessage, 500)
	for i := range msgs {
		msgs[i] = engine.BatchMessage{Payload: i}
	}
	ids, err := c.SendBatch(ctx, q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(msgs) {
		t.Fatalf("%d ids for %d messages", len(ids), len(msgs))
	}
	if n := pgtest.Live(t, s, q); n != len(msgs) {
		t.Fatalf("%d messages committed, want %d", n, len(msgs))
	}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("id %d of message %d does not follow %d", id, i, ids[i-1])
		}
		if got := payloadOf(t, s, q, id); got != strconv.Itoa(i) {
			t.Fatalf("id %d (message %d) names payload %s", id, i, got)
		}
	}
}

// A batch with one bad message writes nothing: refused before the write
// when pgbus sees it, rolled back when only PostgreSQL does, after the
// messages before it were written.
func TestSendBatchIsAllOrNone(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)

	_, err := c.SendBatch(ctx, q, []engine.BatchMessage{{Payload: 1}, {Payload: 2}, {Payload: make(chan int)}})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "the batch's message at index 2") {
		t.Fatalf("a payload that does not marshal: %v; want ErrInvalid naming message 2", err)
	}
	// A number jsonb cannot hold fails in PostgreSQL, in a batch with keys
	// after two messages were written one by one.
	_, err = c.SendBatch(ctx, q, []engine.BatchMessage{
		{Payload: 1, Options: engine.SendOptions{IdempotencyKey: "a"}},
		{Payload: 2},
		{Payload: json.RawMessage(`1e1000000`)},
	})
	if !errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTxFailed) || strings.Contains(err.Error(), "roll it back") {
		t.Fatalf("a number jsonb cannot hold: %v; want ErrInvalid, not a transaction for the caller to roll back", err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("%d messages, want none", n)
	}
	if n := keyRows(t, s, q, "a"); n != 0 {
		t.Errorf("the rolled back batch left %d rows of its key", n)
	}
	// The key is free: a later send of it writes a message.
	ids, err := c.SendBatch(ctx, q, []engine.BatchMessage{{Payload: 3, Options: engine.SendOptions{IdempotencyKey: "a"}}})
	if err != nil || pgtest.Live(t, s, q) != 1 || payloadOf(t, s, q, ids[0]) != "3" {
		t.Fatalf("send of the freed key: %v, %v", ids, err)
	}
}

// A value PostgreSQL refuses (a number beyond what jsonb holds, in a
// payload or a header) fails the batch naming the message that holds it,
// as a message pgbus refuses itself is named, whether the batch is one
// statement, is written message by message for its keys, or is sent in
// the caller's transaction; the batch is all or none as before.
func TestSendBatchNamesTheMessagePostgreSQLRefuses(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	huge := json.RawMessage(`{"n": 1e200000}`)

	for name, b := range map[string]struct {
		msgs []engine.BatchMessage
		at   int
	}{
		"payload": {[]engine.BatchMessage{{Payload: 1}, {Payload: huge}, {Payload: 3}}, 1},
		"header":  {[]engine.BatchMessage{{Payload: 1}, {Payload: 2}, {Payload: 3, Options: engine.SendOptions{Headers: map[string]any{"n": huge}}}}, 2},
		"keyed":   {[]engine.BatchMessage{{Payload: 1, Options: engine.SendOptions{IdempotencyKey: "k"}}, {Payload: huge}, {Payload: 3}}, 1},
	} {
		want := fmt.Sprintf("(the batch's message at index %d)", b.at)
		_, err := c.SendBatch(ctx, q, b.msgs)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "numeric") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: SendBatch: %v; want ErrInvalid naming %s", name, err, want)
		}
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.SendBatchTx(ctx, tx, q, b.msgs)
		_ = tx.Rollback(ctx)
		if !errors.Is(err, store.ErrInvalid) || !errors.Is(err, store.ErrTxFailed) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: SendBatchTx: %v; want ErrInvalid, the transaction failed, naming %s", name, err, want)
		}
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("%d messages, want none", n)
	}
}

// Each message of a batch goes to its own priority level; a level the
// queue does not have refuses the whole batch, naming the message.
func TestSendBatchRoutesToPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 3)
	c := pgtest.NewClient(t, s, q, nil)

	_, err := c.SendBatch(ctx, q, []engine.BatchMessage{{Payload: 0}, {Payload: 1, Options: engine.SendOptions{Priority: 3}}})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "levels 0 to 2") || !strings.Contains(err.Error(), "the batch's message at index 1") {
		t.Fatalf("priority 3 of 3 levels: %v; want ErrInvalid naming the levels and the message", err)
	}
	levels := []int{2, 0, 1, 2}
	msgs := make([]engine.BatchMessage, len(levels))
	for i, lv := range levels {
		msgs[i] = engine.BatchMessage{Payload: i, Options: engine.SendOptions{Priority: lv}}
	}
	ids, err := c.SendBatch(ctx, q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	for level, want := range []int{1, 1, 2} {
		if n := pgtest.Live(t, s, store.PriorityQueueName(q, level)); n != want {
			t.Errorf("level %d holds %d messages, want %d", level, n, want)
		}
	}
	for i, lv := range levels {
		if got := payloadOf(t, s, store.PriorityQueueName(q, lv), ids[i]); got != strconv.Itoa(i) {
			t.Errorf("message %d at level %d: payload %s", i, lv, got)
		}
	}
}

// An idempotency key returns the first message's id, sent earlier in the
// batch or before it by Send.
func TestSendBatchIdempotencyKeys(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)

	earlier := pgtest.Send(t, c, q, 0, engine.SendOptions{IdempotencyKey: "order:1"})
	ids, err := c.SendBatch(ctx, q, []engine.BatchMessage{
		{Payload: 1, Options: engine.SendOptions{IdempotencyKey: "order:2"}},
		{Payload: 2},
		{Payload: 3, Options: engine.SendOptions{IdempotencyKey: "order:1"}},
		{Payload: 4, Options: engine.SendOptions{IdempotencyKey: "order:2"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ids[2] != earlier || ids[3] != ids[0] || ids[1] == ids[0] || ids[0] == earlier {
		t.Fatalf("ids %v, earlier send %d: want the third to be %d and the fourth the first's", ids, earlier, earlier)
	}
	if n := pgtest.Live(t, s, q); n != 3 {
		t.Errorf("%d messages, want 3 (order:1, order:2 and one without a key)", n)
	}
	if id := pgtest.Send(t, c, q, 5, engine.SendOptions{IdempotencyKey: "order:2"}); id != ids[0] {
		t.Errorf("Send of a key SendBatch committed returned %d, want %d", id, ids[0])
	}
}

// The observers see each message of a batch, with its id, and their
// headers are written with the messages.
func TestSendBatchIsObserved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	obs := fixedHeaderSender{ids: make(chan int64, 8)}
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{obs} })

	ids, err := c.SendBatch(ctx, q, []engine.BatchMessage{{Payload: 1}, {Payload: 2}, {Payload: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ids {
		if got := <-obs.ids; got != w {
			t.Errorf("observer's send %d got id %d, want %d", i, got, w)
		}
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE headers->>'traceparent' = '00-trace-span-01'`); n != 3 {
		t.Errorf("%d messages carry the observer's header, want 3", n)
	}
}

// A message of a batch the store refuses before writing (a payload with
// NUL, over the size limit or not JSON, headers with NUL) is a
// *BatchMessageError holding its index, as every other refusal of one
// message of a batch is; the text names the index once. A single send's
// refusal names no message, having only one.
func TestSendBatchStoreRefusalIsBatchMessageError(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	big := json.RawMessage(`"` + strings.Repeat("x", store.MaxPayloadBytes) + `"`)
	for name, bad := range map[string]engine.BatchMessage{
		"NUL in the payload": {Payload: json.RawMessage(`{"a":"\u0000"}`)},
		"payload over 8 MiB": {Payload: big},
		"payload not JSON":   {Payload: json.RawMessage(`{"a":`)},
		"NUL in a header":    {Payload: 1, Options: engine.SendOptions{Headers: map[string]any{"h": "a\x00b"}}},
	} {
		_, err := c.SendBatch(ctx, q, []engine.BatchMessage{{Payload: 1}, bad, {Payload: 3}})
		var be *engine.BatchMessageError
		if !errors.Is(err, store.ErrInvalid) || !errors.As(err, &be) || be.Index != 1 || strings.Count(err.Error(), "index 1") != 1 {
			t.Errorf("%s: SendBatch: %v; want a *BatchMessageError of ErrInvalid at index 1, named once", name, err)
		}
		_, err = c.Send(ctx, q, bad.Payload, bad.Options)
		if !errors.Is(err, store.ErrInvalid) || errors.As(err, &be) || strings.HasPrefix(err.Error(), "message:") || strings.Contains(err.Error(), "index") {
			t.Errorf("%s: Send: %v; want ErrInvalid naming no message", name, err)
		}
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("%d messages, want none", n)
	}
}
