package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// onlyMessage reads the only message of queue.
func onlyMessage(t testing.TB, s *store.Store, queue string) (int64, string, map[string]any) {
	t.Helper()
	var id int64
	var payload string
	var raw []byte
	err := s.Pool().QueryRow(testContext(t), `SELECT msg_id, message::text, headers FROM pgmq."q_`+queue+`"`).Scan(&id, &payload, &raw)
	if err != nil {
		t.Fatalf("the only message of %s: %v", queue, err)
	}
	var h map[string]any
	_ = json.Unmarshal(raw, &h)
	return id, payload, h
}

func TestRetryDeadRoundTrip(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"a":1}`), Headers: json.RawMessage(`{"pgbus_kind":"k","x-pgmq-group":"g"}`)})
	if err != nil {
		t.Fatal(err)
	}
	dead := deadIDs(t, s, q, dlq, []int64{id}, "Boom", store.ReasonNonRetryable)[0]

	dry, err := s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{DryRun: true})
	if err != nil || !dry.DryRun || dry.Retried != 1 || len(dry.Moved) != 1 || dry.Moved[0].Queue != q || dry.Moved[0].MsgID != 0 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatal("dry run moved the message")
	}

	rep, err := s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
	if err != nil || rep.Retried != 1 || rep.Failed != 0 || len(rep.Moved) != 1 {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	back, payload, h := onlyMessage(t, s, q)
	if rep.Moved[0] != (store.RetriedMessage{DLQ: dlq, DLQMsgID: dead, Queue: q, MsgID: back}) {
		t.Fatalf("moved = %+v, want message %d in %s", rep.Moved[0], back, q)
	}
	if payload != `{"a": 1}` || h["pgbus_kind"] != "k" || h["x-pgmq-group"] != "g" || h[store.HeaderDLQRetries] != float64(1) || h[store.HeaderDeadLetter] != nil {
		t.Fatalf("retried message = %s %v", payload, h)
	}
	if hist, err := s.FailureHistory(ctx, q, back); err != nil || len(hist) != 1 || hist[0].ErrorClass != "Boom" {
		t.Fatalf("history after retry = %+v, %v", hist, err)
	}
	// Retrying the same id again: a clear error, and still one live message.
	_, err = s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
	wantErr(t, "second retry", err, store.ErrNotFound, "may have been retried")
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 1 {
		t.Fatalf("%d live messages after a second retry, want 1", n)
	}
	// Dying again records the trip; retrying again counts it.
	dead2 := deadIDs(t, s, q, dlq, []int64{back}, "Boom", store.ReasonNonRetryable)[0]
	_, b := dlBlock(t, s, dlq, dead2)
	if dlNumber(t, b, "retries_from_dlq") != 1 {
		t.Fatalf("block after a second death = %v", b)
	}
	if _, err := s.RetryDead(ctx, q, []int64{dead2}, store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, h := onlyMessage(t, s, q); h[store.HeaderDLQRetries] != float64(2) {
		t.Fatalf("headers after the second retry = %v", h)
	}
}

func TestRetryDeadManyIsolatesFailures(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 3, "k", "E", store.ReasonNonRetryable)
	rep, err := s.RetryDead(ctx, q, []int64{ids[0], 999_999, ids[2], ids[0]}, store.RetryOptions{})
	if err != nil || rep.Retried != 2 || rep.Failed != 1 || !strings.Contains(rep.FirstError, "999999") {
		t.Fatalf("retry = %+v, %v; want 2 retried, the unknown id failed", rep, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 2 {
		t.Fatalf("%d messages back, want 2", n)
	}
}

func TestRetryDeadHeadersKeptAside(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	id := dlSendRaw(t, s, q, `{"x":1}`, `["a","b"]`)
	dead := deadIDs(t, s, q, store.DLQName(q), []int64{id}, "", store.ReasonMaxRetriesExceeded)[0]
	if _, err := s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	var headers string
	if err := s.Pool().QueryRow(ctx, `SELECT headers::text FROM pgmq."q_`+q+`"`).Scan(&headers); err != nil || headers != `["a", "b"]` {
		t.Fatalf("headers after retry = %s, %v; want the original array", headers, err)
	}
}

// A producer's header of the name pgbus keeps headers that are no JSON
// object under, beside others, is one of its headers: a retry keeps them
// all, as for any object, rather than taking that one for what pgbus
// kept aside.
func TestRetryDeadKeepsAProducersOriginalHeadersHeader(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	id := dlSendRaw(t, s, q, `{"x":1}`, `{"pgbus_kind":"ok","trace":"keep-me","pgbus_original_headers":"from-producer"}`)
	dead := deadIDs(t, s, q, store.DLQName(q), []int64{id}, "", store.ReasonMaxRetriesExceeded)[0]
	if _, err := s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	var headers map[string]any
	if err := s.Pool().QueryRow(ctx, `SELECT headers FROM pgmq."q_`+q+`"`).Scan(&headers); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"pgbus_kind": "ok", "trace": "keep-me", store.HeaderOriginalHeaders: "from-producer",
		store.HeaderDLQRetries: float64(1), store.HeaderIdempotencyKey: q + ":" + strconv.FormatInt(id, 10)} {
		if headers[k] != want {
			t.Errorf("header %s after retry = %v, want %v (headers %v)", k, headers[k], want, headers)
		}
	}
	if _, ok := headers[store.HeaderDeadLetter]; ok {
		t.Errorf("the block came back with the retry: %v", headers)
	}
}

// createSubQueue makes the PGMQ tables of physical queue name with the
// layout of an existing queue, as a priority sub-queue.
func createSubQueue(t testing.TB, s *store.Store, like, name string) {
	t.Helper()
	ctx := testContext(t)
	_, err := s.Pool().Exec(ctx, `
		CREATE TABLE pgmq."q_`+name+`" (LIKE pgmq."q_`+like+`" INCLUDING ALL);
		CREATE TABLE pgmq."a_`+name+`" (LIKE pgmq."a_`+like+`" INCLUDING ALL);
		INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('`+name+`', false, false)`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropSubQueue(t, s, name) })
}

func dropSubQueue(t testing.TB, s *store.Store, name string) {
	_, err := s.Pool().Exec(context.Background(), `
		DROP TABLE IF EXISTS pgmq."q_`+name+`"; DROP TABLE IF EXISTS pgmq."a_`+name+`";
		DELETE FROM pgmq.meta WHERE queue_name = '`+name+`'`)
	if err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}

func TestRetryDeadToSubQueueAndFallBack(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	sub := q + "_p2"
	createSubQueue(t, s, q, sub)
	id, err := s.Send(ctx, sub, msg(`{"p":2}`))
	if err != nil {
		t.Fatal(err)
	}
	dead := deadIDs(t, s, sub, store.DLQName(q), []int64{id}, "E", store.ReasonNonRetryable)[0]
	_, b := dlBlock(t, s, store.DLQName(q), dead)
	if dlString(t, b, "source_queue") != sub {
		t.Fatalf("source_queue = %v, want %s", b["source_queue"], sub)
	}
	rep, err := s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{})
	if err != nil || rep.Moved[0].Queue != sub {
		t.Fatalf("retry = %+v, %v; want back in %s", rep, err, sub)
	}
	back, _, _ := onlyMessage(t, s, sub)
	dead = deadIDs(t, s, sub, store.DLQName(q), []int64{back}, "E", store.ReasonNonRetryable)[0]
	dropSubQueue(t, s, sub)
	rep, err = s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{})
	if err != nil || rep.Moved[0].Queue != q {
		t.Fatalf("retry with the sub-queue gone = %+v, %v; want the base queue", rep, err)
	}
	if _, payload, h := onlyMessage(t, s, q); payload != `{"p": 2}` || h[store.HeaderDLQRetries] != float64(2) {
		t.Fatalf("message in the base queue = %s %v", payload, h)
	}
}

// A queue with priority levels has no table of its own name: a dead
// message goes back to its level when that is known and still there, and
// else to the level a send without a priority takes, level 0 (a row
// another client wrote, with no dead-letter block, or one whose level was
// dropped outside pgbus while the others remain). With that level gone too,
// the retry says to create the queue again, which makes the missing levels.
func TestRetryDeadIntoQueueWithPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	pq := newLevelledQueue(t, s)
	dlq := store.DLQName(pq)
	p0, p1 := store.PriorityQueueName(pq, 0), store.PriorityQueueName(pq, 1)
	var raw int64
	if err := s.Pool().QueryRow(ctx, `INSERT INTO pgmq."q_`+dlq+`" (vt, message) VALUES (clock_timestamp(), '{"raw":1}') RETURNING msg_id`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	dry, err := s.RetryDead(ctx, pq, []int64{raw}, store.RetryOptions{DryRun: true})
	if err != nil || dry.Retried != 1 || dry.Moved[0].Queue != p0 {
		t.Fatalf("dry run of a row without a block = %+v, %v; want it bound for %s", dry, err, p0)
	}
	rep, err := s.RetryDead(ctx, pq, []int64{raw}, store.RetryOptions{})
	if err != nil || rep.Retried != 1 || rep.Moved[0].Queue != p0 {
		t.Fatalf("retry of a row without a block = %+v, %v; want it in %s", rep, err, p0)
	}
	if _, payload, _ := onlyMessage(t, s, p0); payload != `{"raw": 1}` {
		t.Fatalf("message in %s = %s", p0, payload)
	}
	if _, err := s.PurgeQueue(ctx, pq); err != nil {
		t.Fatal(err)
	}

	id, err := s.Send(ctx, p1, msg(`{"p":1}`))
	if err != nil {
		t.Fatal(err)
	}
	dead := deadIDs(t, s, p1, dlq, []int64{id}, "E", store.ReasonNonRetryable)[0]
	if rep, err := s.RetryDead(ctx, pq, []int64{dead}, store.RetryOptions{}); err != nil || rep.Moved[0].Queue != p1 {
		t.Fatalf("retry = %+v, %v; want back in %s", rep, err, p1)
	}
	back, _, _ := onlyMessage(t, s, p1)
	dead = deadIDs(t, s, p1, dlq, []int64{back}, "E", store.ReasonNonRetryable)[0]
	pgtest.DropOutside(t, s, p1)
	f := store.DeadFilter{Queue: pq}
	dry, err = s.RetryDeadMatching(ctx, f, 10, store.RetryOptions{DryRun: true})
	if err != nil || dry.Retried != 1 || dry.Moved[0].Queue != p0 {
		t.Fatalf("dry run with level 1 gone = %+v, %v; want it bound for %s", dry, err, p0)
	}
	if rep, err := s.RetryDeadMatching(ctx, f, 10, store.RetryOptions{Expect: dry.Token}); err != nil || rep.Retried != 1 || rep.Moved[0].Queue != p0 {
		t.Fatalf("guarded retry with level 1 gone = %+v, %v; want it in %s", rep, err, p0)
	}
	back, _, _ = onlyMessage(t, s, p0)
	dead = deadIDs(t, s, p0, dlq, []int64{back}, "E", store.ReasonNonRetryable)[0]

	pgtest.DropOutside(t, s, p0)
	_, err = s.RetryDead(ctx, pq, []int64{dead}, store.RetryOptions{})
	wantErr(t, "retry with levels 0 and 1 gone", err, store.ErrNotFound, "create queue "+pq+" again")
	if err := s.CreatePriorityQueue(ctx, pq, 3); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.RetryDead(ctx, pq, []int64{dead}, store.RetryOptions{}); err != nil || rep.Moved[0].Queue != p0 {
		t.Fatalf("retry once the queue is created again = %+v, %v; want it in %s", rep, err, p0)
	}
}

func TestRetryDeadWithCorrectedPayload(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	_, err := s.RetryDead(ctx, q, ids, store.RetryOptions{Payload: json.RawMessage(`{}`)})
	wantErr(t, "payload with two ids", err, store.ErrInvalid, "exactly one")
	_, err = s.RetryDead(ctx, q, ids[:1], store.RetryOptions{Payload: json.RawMessage(`{bad`)})
	wantErr(t, "payload not JSON", err, store.ErrInvalid, "not valid JSON")
	_, err = s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{Payload: json.RawMessage(`{}`)})
	wantErr(t, "payload with a filter", err, store.ErrInvalid, "one message")

	rep, err := s.RetryDead(ctx, q, ids[:1], store.RetryOptions{Payload: json.RawMessage(`{"n":0,"fixed":true}`)})
	if err != nil || rep.Retried != 1 {
		t.Fatalf("retry with payload = %+v, %v", rep, err)
	}
	back, payload, _ := onlyMessage(t, s, q)
	if payload != `{"n": 0, "fixed": true}` {
		t.Fatalf("payload = %s", payload)
	}
	hist, err := s.FailureHistory(ctx, q, back)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	note := hist[1]
	if note.ErrorClass != store.PayloadReplacedClass || note.Attempt != 0 || note.Kind != "k" ||
		!strings.HasSuffix(note.ErrorMessage, `{"n": 0}`) || !strings.Contains(note.ErrorMessage, fmt.Sprintf("msg_id %d", ids[0])) ||
		!strings.Contains(note.ErrorMessage, "until purged or the queue's dead retention deletes it") {
		t.Fatalf("payload note = %+v", note)
	}
	var archived string
	if err := s.Pool().QueryRow(ctx, `SELECT message::text FROM pgmq."a_`+dlq+`" WHERE msg_id = $1 AND headers ? 'pgbus_dead_letter'`, ids[0]).Scan(&archived); err != nil || archived != `{"n": 0}` {
		t.Fatalf("archived original = %s, %v", archived, err)
	}
}

// Ten thousand dead messages retried by filter, while the target refuses
// about 1%: every message ends in exactly one place.
func TestRetryDeadMatchingTenThousand(t *testing.T) {
	// Not parallel: loading and retrying ten thousand messages share one
	// context of two minutes, which beside the package's other tests on a
	// busy machine they outlasted.
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	const total = 10_000
	start := time.Now()
	for off := 0; off < total; off += 5000 {
		batch := make([]store.NewMessage, 5000)
		for i := range batch {
			batch[i] = msg(fmt.Sprintf(`{"n":%d}`, off+i))
		}
		ids, err := s.SendBatch(ctx, q, batch)
		if err != nil {
			t.Fatal(err)
		}
		for c := 0; c < len(ids); c += 2500 {
			deadIDs(t, s, q, dlq, ids[c:c+2500], "E", store.ReasonMaxRetriesExceeded)
		}
	}
	t.Logf("loaded %d dead messages in %v", total, time.Since(start))
	fn := "pgbus." + uniqueName("refuse")
	_, err := s.Pool().Exec(ctx, `
		CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF (NEW.message->>'n')::int % 97 = 0 THEN RAISE EXCEPTION 'refused %', NEW.message->>'n'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON pgmq."q_`+q+`" FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.Pool().Exec(context.Background(), `DROP FUNCTION IF EXISTS `+fn+` CASCADE`) })

	var progress [][2]int
	start = time.Now()
	rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, store.MaxDeadBulk, store.RetryOptions{
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) },
	})
	t.Logf("retried %d messages in %v", total, time.Since(start))
	const refused = total/97 + 1 // n = 0, 97, ..., 9991
	if err != nil || rep.Retried != total-refused || rep.Failed != refused || !strings.Contains(rep.FirstError, "refused ") {
		t.Fatalf("report retried=%d failed=%d first=%q (%v); want %d and %d", rep.Retried, rep.Failed, rep.FirstError, err, total-refused, refused)
	}
	if len(rep.Moved) != store.MaxRetryMoved || rep.MovedOmitted != rep.Retried-store.MaxRetryMoved {
		t.Fatalf("moved list %d, omitted %d", len(rep.Moved), rep.MovedOmitted)
	}
	if len(progress) != total/500 || progress[len(progress)-1] != [2]int{total, total} {
		t.Fatalf("progress calls = %d, last %v", len(progress), progress[len(progress)-1])
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`" WHERE (message->>'n')::int % 97 = 0 AND headers ? 'pgbus_dead_letter'`); n != refused {
		t.Fatalf("%d refused messages still in the DLQ with their block, want %d", n, refused)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != refused {
		t.Fatalf("DLQ holds %d, want %d", n, refused)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" q JOIN pgmq."q_`+dlq+`" d ON d.message->'n' = q.message->'n'`); n != 0 {
		t.Fatalf("%d messages in both places", n)
	}
	if n := dlCount(t, s, `SELECT count(DISTINCT n) FROM (SELECT message->'n' AS n FROM pgmq."q_`+q+`" UNION ALL SELECT message->'n' FROM pgmq."q_`+dlq+`") u`); n != total {
		t.Fatalf("%d distinct messages in queue and DLQ, want %d", n, total)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures f JOIN pgmq."q_`+q+`" m ON f.queue_name = $1 AND f.msg_id = m.msg_id`, q); n != total-refused {
		t.Fatalf("%d failure rows followed their message, want %d", n, total-refused)
	}
}

// A retry by filter cancelled in the middle of a page counts the messages
// of that page that moved before it stopped: they stay moved, and a report
// of none would hide them.
func TestRetryCancelledMidPageCountsWhatMoved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	pgtest.DeadLetterN(t, s, q, 40, pgtest.DeadSpec{})
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	trace := func(context.Context, string, int64, store.TraceContext) (store.TraceContext, func(string, int64, error)) {
		return store.TraceContext{}, func(_ string, _ int64, err error) {
			if err == nil {
				cancel() // after the first message moved
			}
		}
	}
	rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 100, store.RetryOptions{Trace: trace})
	moved := pgtest.Live(t, s, q)
	if !errors.Is(err, context.Canceled) || moved == 0 || moved == 40 || rep.Retried != moved || len(rep.Moved) != moved {
		t.Fatalf("cancelled retry = %d retried (%d listed), %v; want context.Canceled and the %d moved counted", rep.Retried, len(rep.Moved), err, moved)
	}
}

// A corrected payload PostgreSQL cannot store (a number past what jsonb's
// numeric holds) is the caller's to change: RetryDead refuses it as
// invalid, and the message stays dead.
func TestRetryDeadPayloadPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 1, "k", "BadInput", store.ReasonNonRetryable)
	rep, err := s.RetryDead(ctx, store.DLQName(q), ids, store.RetryOptions{Payload: json.RawMessage(`{"a":1e200000}`)})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "PostgreSQL cannot store the corrected payload") || rep.Retried != 0 {
		t.Fatalf("retry = %+v, %v; want it refused as invalid", rep, err)
	}
	wantCounted(t, s, store.DLQName(q), 1)
}
