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
	id, err := s.Send(ctx, queue, m)
	if err != nil {
		tb.Fatalf("pgtest: send to %s: %v", queue, err)
	}
	got, err := s.Read(ctx, queue, time.Hour, 1)
	if err != nil || len(got) != 1 || got[0].ID != id {
		tb.Fatalf("pgtest: read message %d of %s: %v, %v", id, queue, got, err)
	}
	item := store.RetryItem{MsgID: id, Delay: time.Hour, Failure: store.Failure{Attempt: got[0].ReadCount, ErrorClass: "E", ErrorMessage: "boom"}}
	if _, err := s.RetryMany(ctx, queue, []store.RetryItem{item}); err != nil {
		tb.Fatalf("pgtest: record the failure of message %d of %s: %v", id, queue, err)
	}
	return id
}
