package pgtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Retrying sends a message to queue (a plain queue or one level), reads
// it and records its failure as a worker does, leaving it to wait an hour
// for its next attempt (state retrying); it returns its id.
func Retrying(tb testing.TB, s *store.Store, queue string) int64 {
	tb.Helper()
	return RetryingMessage(tb, s, queue, store.NewMessage{Payload: json.RawMessage(`{}`)})
}

// RetryingMessage is Retrying with the message to send, its headers (a
// job kind) or payload (a Ruby pgbus job_class) included.
func RetryingMessage(tb testing.TB, s *store.Store, queue string, m store.NewMessage) int64 {
	tb.Helper()
	ctx := Context(tb)
	got := sendAndRead(tb, s, queue, m)
	id := got.ID
	item := store.RetryItem{MsgID: id, Delay: time.Hour, Failure: store.Failure{Attempt: got.ReadCount, ErrorClass: "E", ErrorMessage: "boom"}}
	if _, err := s.RetryMany(ctx, queue, []store.RetryItem{item}); err != nil {
		tb.Fatalf("pgtest: record the failure of message %d of %s: %v", id, queue, err)
	}
	return id
}

// Held sends a message to queue and has the circuit breaker named hold
// it for five minutes, as a worker does with a job that meets the breaker
// open (until its open period ends), the queue recorded among the
// breaker's users; it returns the message's id.
func Held(tb testing.TB, s *store.Store, queue, breaker string) int64 {
	tb.Helper()
	ctx := Context(tb)
	got := sendAndRead(tb, s, queue, store.NewMessage{Payload: json.RawMessage(`{}`)})
	id := got.ID
	item := store.SnoozeItem{MsgID: id, Delay: 5 * time.Minute, Breaker: breaker, ReadCount: got.ReadCount, EnqueuedAt: got.EnqueuedAt}
	if n, err := s.SnoozeMany(ctx, queue, []store.SnoozeItem{item}); err != nil || len(n) != 1 {
		tb.Fatalf("pgtest: snooze message %d of %s: %v, %v", id, queue, n, err)
	}
	if err := s.RecordBreakerUsers(ctx, breaker, []store.BreakerUser{{Queue: queue}}); err != nil {
		tb.Fatalf("pgtest: record %s among the users of breaker %s: %v", queue, breaker, err)
	}
	return id
}

// sendAndRead sends m to queue and reads it, which must be the one
// message visible there.
func sendAndRead(tb testing.TB, s *store.Store, queue string, m store.NewMessage) store.Message {
	tb.Helper()
	ctx := Context(tb)
	id, err := s.Send(ctx, queue, m)
	if err != nil {
		tb.Fatalf("pgtest: send to %s: %v", queue, err)
	}
	got, err := s.Read(ctx, queue, time.Hour, 1)
	if err != nil || len(got) != 1 || got[0].ID != id {
		tb.Fatalf("pgtest: read message %d of %s: %v, %v", id, queue, got, err)
	}
	return got[0]
}
