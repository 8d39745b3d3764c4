package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A worker reads a message's kind as the DLQ's views and filters do: a
// pgbus_kind or job_class that is no string is its JSON text, and a
// pgbus_kind that is empty is the kind, not a reason to look at job_class.
// Dead-lettered, each message is listed under the kind its handler saw.
func TestKindAsTheDLQReadsIt(t *testing.T) {
	t.Parallel()
	s := pgtest.Store(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewFastQueue(t, s, "kinds", nil)
	msgs := []store.NewMessage{
		{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": 5}`)},
		{Payload: json.RawMessage(`{"job_class": 123}`)},
		{Payload: json.RawMessage(`{"job_class": "Receipt"}`), Headers: json.RawMessage(`{"pgbus_kind": ""}`)},
		{Payload: json.RawMessage(`{"job_class": "Receipt"}`), Headers: json.RawMessage(`{"pgbus_kind": null}`)},
		{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": "charge"}`)},
	}
	ids, err := s.SendBatch(ctx, q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int64]string{}
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(_ context.Context, job *engine.Job) error {
		mu.Lock()
		seen[job.ID] = job.Kind
		mu.Unlock()
		return engine.NonRetryable(errors.New("record the kind"))
	})
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "every message dead-lettered", func() bool { return pgtest.Live(t, s, store.DLQName(q)) == len(msgs) })
	page, err := s.ListDead(ctx, store.DeadFilter{Queue: q}, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[int64]string{}
	for _, it := range page.Items {
		listed[it.SourceMsgID] = it.Kind
	}
	mu.Lock()
	defer mu.Unlock()
	for i, want := range []string{"5", "123", "", "Receipt", "charge"} {
		if seen[ids[i]] != want || listed[ids[i]] != want {
			t.Errorf("message %d (%s, %s): the handler saw kind %q and the DLQ lists %q; want %q for both",
				ids[i], msgs[i].Headers, msgs[i].Payload, seen[ids[i]], listed[ids[i]], want)
		}
	}
}
