package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A send whose deadline comes before its delay ends is refused, as one
// whose deadline has passed is: the message would be dead-lettered when it
// became due, without running. Nothing is written.
func TestSendRefusesADeadlineBeforeItsDelayEnds(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	req := ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`), Delay: 2 * time.Hour, Deadline: time.Now().Add(time.Hour)}
	if _, err := svc.Send(ctx, req); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "before the delay") {
		t.Fatalf("send with a 2h delay and a deadline in 1h: %v; want ErrInvalid saying the deadline comes first", err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("queue %s holds %d messages after the refused send; want none", q, n)
	}
	req.Deadline = time.Now().Add(3 * time.Hour)
	if _, err := svc.Send(ctx, req); err != nil {
		t.Fatalf("send with a 2h delay and a deadline in 3h: %v", err)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Fatalf("queue %s holds %d messages; want the one sent", q, n)
	}
}

// A queue's deadline setting counts from the send, so a delay as long
// dead-letters the message unrun: such a send is refused, saying what to
// give instead, and writes nothing. A shorter delay, or a deadline of the
// message's own after the delay, which replaces the queue's, is sent.
func TestSendRefusesADelayPastTheQueuesDeadline(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(set *store.QueueSettings) { set.Deadline = time.Hour })
	svc := newService(t, s, ops.Options{})
	req := ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`), Delay: 2 * time.Hour}
	_, err := svc.Send(ctx, req)
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "dead-lettered without running") || !strings.Contains(err.Error(), "delay under 1h0m0s") {
		t.Fatalf("send with a 2h delay to a queue whose deadline is 1h: %v; want ErrInvalid saying it would die unrun and what to give", err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("queue %s holds %d messages after the refused send; want none", q, n)
	}
	req.Delay = time.Hour
	if _, err := svc.Send(ctx, req); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("send with a delay as long as the queue's deadline: %v; want ErrInvalid", err)
	}
	for _, ok := range []ops.SendRequest{
		{Queue: q, Payload: json.RawMessage(`{"n": 2}`), Delay: 30 * time.Minute},
		{Queue: q, Payload: json.RawMessage(`{"n": 3}`), Delay: 2 * time.Hour, Deadline: time.Now().Add(3 * time.Hour)},
	} {
		if _, err := svc.Send(ctx, ok); err != nil {
			t.Fatalf("send with delay %s and deadline %v: %v", ok.Delay, ok.Deadline, err)
		}
	}
	if n := pgtest.Live(t, s, q); n != 2 {
		t.Fatalf("queue %s holds %d messages; want the two sent", q, n)
	}
}

// A batch sent to a queue with priority levels by the queue's own name is
// refused naming its levels, with no hint to create the queue: it was told
// the queue does not exist, and to create it. Sent to a level, it is sent.
func TestSendBatchToAQueueWithLevelsNamesThem(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := pgtest.Name("lv")
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true}) })
	msgs := []store.NewMessage{{Payload: json.RawMessage(`1`)}}
	_, err := svc.SendBatch(ctx, q, msgs)
	var e *ops.Error
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "send it to "+q+"_p0 (read first) to "+q+"_p2") || !errors.As(err, &e) || len(e.Hints) != 0 {
		t.Fatalf("batch to %s: %v; want ErrInvalid naming its levels, without hints", q, err)
	}
	if ids, err := svc.SendBatch(ctx, q+"_p1", msgs); err != nil || len(ids) != 1 {
		t.Fatalf("batch to level 1: %v, %v", ids, err)
	}
}

// A send's audit entry holds the options given and leaves out those not
// given, which it used to write as their zero values (a deadline of the
// year 1, headers null, an empty idempotency key).
func TestSendAuditEntryLeavesOutOptionsNotGiven(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	client := uniqueName("send_audit")
	ctx := ops.WithClient(testContext(t), client)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	// Given in the sender's offset, kept in UTC as every time is.
	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	full := ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 2}`), Kind: "charge", Delay: time.Minute,
		Deadline:       deadline.In(time.FixedZone("", -(3*3600 + 1800))),
		IdempotencyKey: "order-42", Headers: map[string]any{"tenant": "acme"}}
	if _, err := svc.Send(ctx, full); err != nil {
		t.Fatal(err)
	}
	rows := auditRows(t, s, client)
	if len(rows) != 2 {
		t.Fatalf("audit rows %+v; want the two sends", rows)
	}
	var bare, given map[string]any
	if err := json.Unmarshal([]byte(rows[0].Arguments), &bare); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(rows[1].Arguments), &given); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kind", "delay", "deadline", "idempotency_key", "headers", "priority"} {
		if _, ok := bare[k]; ok {
			t.Errorf("a send without %s has it in its audit entry: %s", k, rows[0].Arguments)
		}
	}
	if bare["queue"] != q || bare["payload_bytes"] != float64(8) {
		t.Errorf("audit arguments of a bare send: %s; want its queue and payload size", rows[0].Arguments)
	}
	if given["kind"] != "charge" || given["delay"] != "1m" || given["deadline"] != deadline.Format(time.RFC3339) ||
		given["idempotency_key"] != "order-42" || given["headers"] == nil {
		t.Errorf("audit arguments of a send with every option: %s", rows[1].Arguments)
	}
}

// A send to a missing queue whose name no new queue may take names no
// step that creates it, which would be refused; other missing queues do.
func TestSendToAMissingQueueOfAClashingName(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for name, create := range map[string]bool{uniqueName("gone") + "_seq": false, uniqueName("gone"): true} {
		_, err := svc.Send(ctx, ops.SendRequest{Queue: name, Payload: json.RawMessage(`{}`)})
		steps := ops.NextSteps(err)
		if !errors.Is(err, ops.ErrNotFound) || hasHint(steps, ops.OpQueueCreate, map[string]any{"queue": name}) != create || !hasHint(steps, ops.OpQueueStats, nil) {
			t.Errorf("send to missing %s: %v, next %v; want not found, a create step %v, and the list of queues", name, err, steps, create)
		}
	}
}

// A send to a missing queue whose name is longer than a queue pgbus
// creates may have (44 to 47 characters: a DLQ's or a priority level's
// length) names no step that creates it, which would be refused, and
// says why none: the room its dead-letter queue's suffix needs. It named
// pgbus queue create, which refused the name.
func TestSendToAMissingQueueTooLongToCreate(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	name := uniqueName("long")
	name += strings.Repeat("x", 45-len(name))
	_, err := svc.Send(ctx, ops.SendRequest{Queue: name, Payload: json.RawMessage(`{}`)})
	steps := ops.NextSteps(err)
	if !errors.Is(err, ops.ErrNotFound) || hasHint(steps, ops.OpQueueCreate, map[string]any{"queue": name}) || !hasHint(steps, ops.OpQueueStats, nil) ||
		!strings.Contains(err.Error(), "at most 43") || !strings.Contains(err.Error(), "_dlq") {
		t.Errorf("send to missing %s (45 characters): %v, next %v; want not found saying why no queue of that name can be created, no create step, and the list of queues", name, err, steps)
	}
	_, err = svc.SendMany(ctx, ops.SendManyRequest{Queue: name, Payloads: []json.RawMessage{json.RawMessage(`{}`)}})
	if steps := ops.NextSteps(err); !errors.Is(err, ops.ErrNotFound) || hasHint(steps, ops.OpQueueCreate, map[string]any{"queue": name}) || !strings.Contains(err.Error(), "at most 43") {
		t.Errorf("send of many to missing %s (45 characters): %v, next %v; want no create step, saying why", name, err, steps)
	}
}
