package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func keyed(payload, key string) store.NewMessage {
	return store.NewMessage{Payload: json.RawMessage(payload), IdempotencyKey: key}
}

// Concurrent sends of one key write exactly one message, and every sender
// gets its id.
func TestIdempotencyKeyUnderConcurrentSends(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	const senders = 16
	ids := make([]int64, senders)
	errs := make([]error, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = s.Send(ctx, q, keyed(`{"charge":42}`, "charge-42"))
		}()
	}
	wg.Wait()
	for i := range senders {
		if errs[i] != nil {
			t.Fatalf("sender %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("sender %d got id %d, sender 0 got %d: want one message", i, ids[i], ids[0])
		}
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != 1 {
		t.Fatalf("depth = %d, want exactly one message", m.Depth)
	}
}

func TestIdempotencyKeyLifetime(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	first, err := s.Send(ctx, q, keyed(`1`, "k"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Send(ctx, q, keyed(`2`, "other-key"))
	if err != nil || other == first {
		t.Fatalf("a different key must make a new message: %d %v", other, err)
	}
	if _, err := s.Archive(ctx, q, first); err != nil {
		t.Fatal(err)
	}
	again, err := s.Send(ctx, q, keyed(`1`, "k"))
	if err != nil || again != first {
		t.Fatalf("send after archive = %d (%v), want the archived message %d", again, err, first)
	}
	// Past the retention window the key is free again.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`" SET archived_at = now() - interval '8 days'`); err != nil {
		t.Fatal(err)
	}
	fresh, err := s.Send(ctx, q, keyed(`1`, "k"))
	if err != nil || fresh == first {
		t.Fatalf("send after retention = %d (%v), want a new message", fresh, err)
	}
	// A deleted (not archived) message frees its key too.
	if _, err := s.Delete(ctx, q, fresh); err != nil {
		t.Fatal(err)
	}
	third, err := s.Send(ctx, q, keyed(`1`, "k"))
	if err != nil || third == fresh || third == first {
		t.Fatalf("send after delete = %d (%v), want a new message", third, err)
	}
	// The same key on another queue is another message.
	q2 := newQueue(t, s)
	elsewhere, err := s.Send(ctx, q2, keyed(`1`, "k"))
	if err != nil || elsewhere <= 0 {
		t.Fatalf("send to another queue: %d %v", elsewhere, err)
	}
	if m, _ := s.Metrics(ctx, q2); m.Depth != 1 {
		t.Fatalf("other queue depth = %d, want 1", m.Depth)
	}
}

func TestIdempotencyKeysInBatch(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{keyed(`1`, "a"), msg(`2`), keyed(`3`, "a"), keyed(`4`, "b")})
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != ids[2] || ids[1] == ids[0] || ids[3] == ids[0] || ids[3] == ids[1] {
		t.Fatalf("ids = %v; want the two sends of key a to share one id", ids)
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != 3 {
		t.Fatalf("depth = %d, want 3", m.Depth)
	}
}

func TestIdempotencyKeyBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	for label, key := range map[string]string{
		"too long": strings.Repeat("k", 256),
		"nul":      "a\x00b",
		"bad utf8": "\xff\xfe",
	} {
		if _, err := s.Send(ctx, q, keyed(`1`, key)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", label, err)
		}
	}
	// Injection-looking keys are data.
	id, err := s.Send(ctx, q, keyed(`1`, `'; DROP TABLE pgbus.idempotency_keys; --`))
	if err != nil || id <= 0 {
		t.Fatalf("send with odd key: %d %v", id, err)
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != 1 {
		t.Fatalf("depth = %d, want 1", m.Depth)
	}
}

// A key too long for the headers, which carry it too, is refused as a key
// too long, with the key's limit: it was refused as headers too long,
// naming neither.
func TestIdempotencyKeyTooLongForTheHeaders(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	_, err := s.Send(testContext(t), q, keyedWithHeader(`1`, strings.Repeat("k", store.MaxHeadersBytes)))
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("idempotency key must be valid UTF-8 without NUL, at most %d bytes", store.MaxIdempotencyKeyBytes)) {
		t.Fatalf("send = %v; want ErrInvalid naming the key's limit", err)
	}
}

// keyedWithHeader is keyed with the key in its header too, as the engine
// sends it.
func keyedWithHeader(payload, key string) store.NewMessage {
	m := keyed(payload, key)
	h, _ := json.Marshal(map[string]string{store.HeaderIdempotencyKey: key})
	m.Headers = h
	return m
}

// A dead message retried out of its DLQ takes its idempotency key along:
// a send with the key while it is live, or once archived, returns the
// retried message instead of a duplicate. A key a later send gave to a
// live message stays with it; keys the header cannot hold are ignored.
func TestIdempotencyKeyFollowsARetryOutOfTheDLQ(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	retry := func(dead int64) int64 {
		t.Helper()
		rep, err := s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
		if err != nil || rep.Retried != 1 || len(rep.Moved) != 1 {
			t.Fatalf("retry of %d = %+v, %v", dead, rep, err)
		}
		return rep.Moved[0].MsgID
	}
	send := func(m store.NewMessage) int64 {
		t.Helper()
		id, err := s.Send(ctx, q, m)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	first := send(keyedWithHeader(`1`, "charge-7"))
	back := retry(deadIDs(t, s, q, dlq, []int64{first}, "Boom", store.ReasonNonRetryable)[0])
	if again := send(keyedWithHeader(`1`, "charge-7")); again != back {
		t.Fatalf("send of the key while its retried message %d is live = %d, want %d", back, again, back)
	}
	if _, err := s.Archive(ctx, q, back); err != nil {
		t.Fatal(err)
	}
	if again := send(keyedWithHeader(`1`, "charge-7")); again != back {
		t.Fatalf("send of the key once its retried message %d is archived = %d, want %d", back, again, back)
	}

	// Sent again after it died, the key is the new message's, and stays
	// so when the dead one is retried.
	dead := deadIDs(t, s, q, dlq, []int64{send(keyedWithHeader(`2`, "refund-9"))}, "Boom", store.ReasonNonRetryable)[0]
	resent := send(keyedWithHeader(`2`, "refund-9"))
	if retried := retry(dead); retried == resent {
		t.Fatalf("the retry reused id %d", resent)
	}
	if again := send(keyedWithHeader(`2`, "refund-9")); again != resent {
		t.Fatalf("send of a key a live message holds = %d, want that message %d", again, resent)
	}

	// So it does when that message ran and was archived since, within
	// the queue's archive retention, where a send of the key returns it.
	// Past the retention it holds the key no more: the retried one takes
	// it.
	for _, c := range []struct {
		key      string
		archived string
	}{{"ship-3", "now()"}, {"ship-4", "now() - interval '8 days'"}} {
		dead := deadIDs(t, s, q, dlq, []int64{send(keyedWithHeader(`4`, c.key))}, "Boom", store.ReasonNonRetryable)[0]
		ran := send(keyedWithHeader(`4`, c.key))
		if _, err := s.Archive(ctx, q, ran); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`" SET archived_at = `+c.archived+` WHERE msg_id = $1`, ran); err != nil {
			t.Fatal(err)
		}
		retried := retry(dead)
		want := map[string]int64{"ship-3": ran, "ship-4": retried}[c.key]
		if again := send(keyedWithHeader(`4`, c.key)); again != want {
			t.Errorf("%s: send of the key after the retry = %d; want %d (the message that ran: %d, the retried one: %d)", c.key, again, want, ran, retried)
		}
	}

	// Headers a send could not have written: a key too long for one, and
	// headers that are no object. The retry goes through all the same.
	for _, h := range []string{`{"` + store.HeaderIdempotencyKey + `": "` + strings.Repeat("k", 3000) + `"}`, `["` + store.HeaderIdempotencyKey + `"]`} {
		id := send(store.NewMessage{Payload: json.RawMessage(`3`)})
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" SET headers = $1 WHERE msg_id = $2`, h, id); err != nil {
			t.Fatal(err)
		}
		retry(deadIDs(t, s, q, dlq, []int64{id}, "Boom", store.ReasonNonRetryable)[0])
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.idempotency_keys WHERE queue_name = $1`, q); n != 4 {
		t.Fatalf("%d keys on the queue, want charge-7, refund-9, ship-3 and ship-4 only", n)
	}
}

// A retry out of the DLQ takes the lock a keyed send to its queue takes,
// by ids and by a guarded filter alike: while a send of the key holds it,
// the retry waits; once that send has written its message, the retry sees
// it and leaves the key with it, so a later send of the key returns the
// message first sent, not the retried one.
func TestDLQRetryWaitsForAKeyedSend(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	for _, guarded := range []bool{false, true} {
		s := testStore(t)
		q := newQueue(t, s)
		dlq := store.DLQName(q)
		const key = "invoice-31"
		sent, err := s.Send(ctx, q, keyedWithHeader(`1`, key))
		if err != nil {
			t.Fatal(err)
		}
		dead := deadIDs(t, s, q, dlq, []int64{sent}, "Boom", store.ReasonNonRetryable)[0]
		retry := func() error {
			if !guarded {
				_, err := s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
				return err
			}
			dry, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{DryRun: true})
			if err != nil {
				return err
			}
			_, err = s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{Expect: dry.Token})
			return err
		}

		// A send of the key, held open after taking its lock, as
		// sendOneKeyed takes it.
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(1) || $2, 0))`, q, key); err != nil {
			t.Fatal(err)
		}
		retried := make(chan error, 1)
		go func() { retried <- retry() }()
		pgtest.Eventually(t, time.Minute, "the retry to wait for the send's lock", func() bool {
			return dlCount(t, s, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%`+dlq+`%'`) == 1
		})
		var first int64
		if err := tx.QueryRow(ctx, `INSERT INTO pgmq."q_`+q+`" (vt, message, headers) VALUES (now(), '2', jsonb_build_object($1::text, $2::text)) RETURNING msg_id`,
			store.HeaderIdempotencyKey, key).Scan(&first); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pgbus.idempotency_keys (queue_name, key, msg_id, created_at)
			SELECT $1, $2, msg_id, enqueued_at FROM pgmq."q_`+q+`" WHERE msg_id = $3
			ON CONFLICT (queue_name, key) DO UPDATE SET msg_id = excluded.msg_id, created_at = excluded.created_at`, q, key, first); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-retried; err != nil {
			t.Fatalf("guarded %v: retry after the send: %v", guarded, err)
		}
		if n := pgtest.Live(t, s, q); n != 2 {
			t.Fatalf("guarded %v: %d messages in %s, want the one sent and the one retried", guarded, n, q)
		}
		if again, err := s.Send(ctx, q, keyedWithHeader(`3`, key)); err != nil || again != first {
			t.Fatalf("guarded %v: send of the key after the retry = %d, %v; want the message first sent, %d", guarded, again, err, first)
		}
	}
}

// The other order: a keyed retry holds its lock until its move commits
// (here slowed by a trigger on the queue), and a send of the key that
// comes meanwhile waits for it and returns the retried message.
func TestKeyedSendWaitsForADLQRetry(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	const key = "invoice-32"
	sent, err := s.Send(ctx, q, keyedWithHeader(`"slow"`, key))
	if err != nil {
		t.Fatal(err)
	}
	dead := deadIDs(t, s, q, dlq, []int64{sent}, "Boom", store.ReasonNonRetryable)[0]
	fn := `pgmq."slow_` + q + `"`
	if _, err := s.Pool().Exec(ctx, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.message = '"slow"'::jsonb THEN PERFORM pg_sleep(1); END IF; RETURN NEW; END $$;
		CREATE TRIGGER slow BEFORE INSERT ON pgmq."q_`+q+`" FOR EACH ROW EXECUTE FUNCTION `+fn+`()`); err != nil {
		t.Fatal(err)
	}
	retried := make(chan store.RetryReport, 1)
	go func() {
		rep, err := s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
		if err != nil {
			t.Errorf("retry: %v", err)
		}
		retried <- rep
	}()
	pgtest.Eventually(t, time.Minute, "the retry to hold the key's lock while it moves the message", func() bool {
		return dlCount(t, s, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.locktype = 'advisory' AND l.granted AND a.wait_event = 'PgSleep' AND a.query LIKE '%`+dlq+`%'`) > 0
	})
	again, err := s.Send(ctx, q, keyedWithHeader(`"again"`, key))
	rep := <-retried
	if err != nil || len(rep.Moved) != 1 || again != rep.Moved[0].MsgID {
		t.Fatalf("send of the key during the retry = %d, %v; want the retried message (%+v)", again, err, rep.Moved)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Fatalf("%d messages in %s, want the retried one only", n, q)
	}
}

// A retry whose move fails as it commits (here a deferred constraint
// trigger on the queue) reports the failure, keyed or not, and the
// message stays in its DLQ.
func TestDLQRetryFailingAtCommit(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{false, true} {
		s := testStore(t)
		ctx := testContext(t)
		q := newQueue(t, s)
		dlq := store.DLQName(q)
		m := store.NewMessage{Payload: json.RawMessage(`1`)}
		if keyed {
			m = keyedWithHeader(`1`, "invoice-33")
		}
		sent, err := s.Send(ctx, q, m)
		if err != nil {
			t.Fatal(err)
		}
		dead := deadIDs(t, s, q, dlq, []int64{sent}, "Boom", store.ReasonNonRetryable)[0]
		fn := `pgmq."refuse_` + q + `"`
		if _, err := s.Pool().Exec(ctx, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'refused at commit'; END $$;
			CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON pgmq."q_`+q+`" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION `+fn+`()`); err != nil {
			t.Fatal(err)
		}
		rep, err := s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
		if err == nil || !strings.Contains(err.Error(), "refused at commit") || rep.Retried != 0 {
			t.Errorf("keyed %v: retry failing at commit = %+v, %v; want the failure", keyed, rep, err)
		}
		if n := pgtest.Live(t, s, dlq); n != 1 {
			t.Errorf("keyed %v: %d messages left in the DLQ, want 1", keyed, n)
		}
	}
}

// A key sent to a priority level is honoured for the archive retention of
// its queue, the levels having no settings of their own.
func TestIdempotencyWindowOfPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := uniqueName("lv")
	if err := s.CreatePriorityQueue(ctx, q, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
	set := store.DefaultQueueSettings(q)
	set.ArchiveRetention = time.Hour
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	p := store.PriorityQueueName(q, 1)
	first, err := s.Send(ctx, p, keyed(`1`, "k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Archive(ctx, p, first); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+p+`" SET archived_at = now() - interval '30 minutes'`); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Send(ctx, p, keyed(`1`, "k")); err != nil || again != first {
		t.Fatalf("send of the key 30 minutes after its message was archived = %d, %v; want %d (retention 1 hour)", again, err, first)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+p+`" SET archived_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Send(ctx, p, keyed(`1`, "k")); err != nil || again == first {
		t.Fatalf("send of the key 2 hours after its message was archived = %d, %v; want a new message (retention 1 hour)", again, err)
	}
}

// A batch holding idempotency keys is all or none, as any batch is: a
// message the database refuses (a number too large for jsonb) leaves
// nothing of the batch written, keys included.
func TestKeyedBatchIsAllOrNone(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	_, err := s.SendBatch(ctx, q, []store.NewMessage{keyed(`{"n":1}`, "a"), msg(`{"n":2}`), keyed(`1e200000`, "b")})
	if err == nil {
		t.Fatal("a batch holding a number jsonb cannot store was sent")
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != 0 {
		t.Fatalf("depth = %d after a refused batch, want 0: part of it was written", m.Depth)
	}
	// Key a was not kept either: a send of it writes a message of its own.
	id, err := s.Send(ctx, q, keyed(`{"n":3}`, "a"))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Read(ctx, q, time.Minute, 10)
	if err != nil || len(msgs) != 1 || msgs[0].ID != id || string(msgs[0].Payload) != `{"n": 3}` {
		t.Fatalf("after the refused batch, a send of key a left %+v (%v), want its own message %d", msgs, err, id)
	}
}

// Batches sharing keys, sent at once in opposite orders, wait for each
// other rather than deadlock, and each key gets one message.
func TestKeyedBatchesSharingKeys(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	const keys = 40
	batch := func(reverse bool) []store.NewMessage {
		out := make([]store.NewMessage, keys)
		for i := range keys {
			k := i
			if reverse {
				k = keys - 1 - i
			}
			out[i] = keyed(fmt.Sprintf(`{"k":%d}`, k), fmt.Sprintf("key-%d", k))
		}
		return out
	}
	const senders = 8
	got := make([][]int64, senders)
	errs := make([]error, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() { got[i], errs[i] = s.SendBatch(ctx, q, batch(i%2 == 1)) })
	}
	wg.Wait()
	byKey := map[int]int64{}
	for i := range senders {
		if errs[i] != nil {
			t.Fatalf("sender %d: %v", i, errs[i])
		}
		for j, id := range got[i] {
			k := j
			if i%2 == 1 {
				k = keys - 1 - j
			}
			if prev, ok := byKey[k]; ok && prev != id {
				t.Fatalf("key-%d got ids %d and %d: want one message", k, prev, id)
			}
			byKey[k] = id
		}
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != keys {
		t.Fatalf("depth = %d, want one message per key (%d)", m.Depth, keys)
	}
}

// A batch of more distinct keys than a batch may lock is refused before
// anything is written, saying to split it.
func TestKeyedBatchKeyLimit(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	msgs := make([]store.NewMessage, store.MaxBatchKeys+1)
	for i := range msgs {
		msgs[i] = keyed(`{}`, fmt.Sprintf("k-%d", i))
	}
	_, err := s.SendBatch(ctx, q, msgs)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "smaller batches") {
		t.Fatalf("err = %v, want an invalid batch saying to send smaller batches", err)
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != 0 {
		t.Fatalf("depth = %d, want nothing written", m.Depth)
	}
	// The same keys twice over are as many keys: the batch is sent.
	if _, err := s.SendBatch(ctx, q, append(msgs[:store.MaxBatchKeys:store.MaxBatchKeys], msgs[:10]...)); err != nil {
		t.Fatalf("a batch of %d distinct keys, some repeated: %v", store.MaxBatchKeys, err)
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != store.MaxBatchKeys {
		t.Fatalf("depth = %d, want %d", m.Depth, store.MaxBatchKeys)
	}
}
