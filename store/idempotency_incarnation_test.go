package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// An idempotency key is in force only for the message it was written for:
// a queue dropped and made again outside pgbus (pgmq.drop_queue, then
// pgmq.create), or an unlogged queue emptied by a crash, starts its ids
// over, and the new message that takes the id of the key's message is
// another message. A send of the key writes its own message then; it used
// to return the unrelated one's id, and what it sent was never written.
// So it is for a message sent by a transaction that began before the key
// was written, whose enqueue time comes before the key's.
func TestIdempotencyKeyIsNotHeldByAnotherMessageOfItsID(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	sendKey := func(queue, payload string) int64 {
		t.Helper()
		id, err := s.Send(ctx, queue, keyed(payload, "order-42"))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	payloadOf := func(queue string, id int64) string {
		t.Helper()
		var p string
		if err := s.Pool().QueryRow(ctx, `SELECT message::text FROM pgmq.q_`+queue+` WHERE msg_id = $1`, id).Scan(&p); err != nil {
			t.Fatalf("message %d of %s: %v", id, queue, err)
		}
		return p
	}

	// Dropped and made again outside pgbus.
	pgtest.CreateQueue(t, s, "q1")
	if first := sendKey("q1", `{"order":"A"}`); first != 1 {
		t.Fatalf("the first message of q1 is %d, want 1", first)
	}
	exec(t, s, `SELECT pgmq.drop_queue('q1'); SELECT pgmq.create('q1'); SELECT pgmq.send('q1', '{"unrelated":true}')`)
	if id := sendKey("q1", `{"order":"B"}`); id == 1 || payloadOf("q1", id) != `{"order": "B"}` {
		t.Fatalf("the send of the key after q1 was made again = %d; want order B written as a message of its own, not unrelated message 1", id)
	}
	if again := sendKey("q1", `{"order":"B"}`); pgtest.Live(t, s, "q1") != 2 || payloadOf("q1", again) != `{"order": "B"}` {
		t.Fatalf("a second send of the key = %d, %d messages; want order B's message again, no third", again, pgtest.Live(t, s, "q1"))
	}

	// An unlogged queue that a crash emptied, its ids started over.
	exec(t, s, `SELECT pgmq.create_unlogged('u1')`)
	if first := sendKey("u1", `{"order":"A"}`); first != 1 {
		t.Fatalf("the first message of u1 is %d, want 1", first)
	}
	exec(t, s, `TRUNCATE pgmq.q_u1, pgmq.a_u1 RESTART IDENTITY; SELECT pgmq.send('u1', '{"unrelated":true}')`)
	if id := sendKey("u1", `{"order":"B"}`); id == 1 || payloadOf("u1", id) != `{"order": "B"}` {
		t.Fatalf("the send of the key after u1 was emptied = %d; want order B written as a message of its own", id)
	}

	// A message sent by a transaction older than the key: its enqueue time,
	// the start of its transaction, comes before the key was written.
	pgtest.CreateQueue(t, s, "q2")
	early, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Rollback(ctx)
	if _, err := early.Exec(ctx, `SELECT now()`); err != nil {
		t.Fatal(err)
	}
	if first := sendKey("q2", `{"order":"A"}`); first != 1 {
		t.Fatalf("the first message of q2 is %d, want 1", first)
	}
	exec(t, s, `SELECT pgmq.drop_queue('q2'); SELECT pgmq.create('q2')`)
	if _, err := early.Exec(ctx, `SELECT pgmq.send('q2', '{"unrelated":true}')`); err != nil {
		t.Fatal(err)
	}
	if err := early.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if id := sendKey("q2", `{"order":"B"}`); id == 1 || payloadOf("q2", id) != `{"order": "B"}` {
		t.Fatalf("the send of the key after q2 was made again = %d; want order B written as a message of its own", id)
	}
}
