package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A DLQ page cursor with one byte changed is refused as invalid input, with
// what to do instead; the cursor as issued goes on to the next page.
func TestDLQListTamperedCursor(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k"})
	req := ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1}
	first, err := svc.DLQList(ctx, req)
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	req.Cursor = pgtest.TamperCursor(t, first.NextCursor)
	_, err = svc.DLQList(ctx, req)
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "cursor is not valid for this server; start again without cursor") {
		t.Fatalf("list with a tampered cursor: %v; want ErrInvalid saying to start again", err)
	}
	req.Cursor = first.NextCursor
	next, err := svc.DLQList(ctx, req)
	if err != nil || len(next.Items) != 1 || next.Items[0].MsgID >= first.Items[0].MsgID {
		t.Fatalf("second page: %+v, %v; want the next older message", next, err)
	}
}

// A live-message cursor is refused with another queue or state, as invalid
// input saying to start again, where it gave a wrong page.
func TestQueueMessagesCursorOfAnotherQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	a, b := newQueue(t, s, nil), newQueue(t, s, nil)
	for _, q := range []string{a, b} {
		for range 3 {
			if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: a, Limit: 1})
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	for _, req := range []ops.QueueMessagesRequest{{Queue: b}, {Queue: a, State: "waiting"}} {
		req.Cursor = first.NextCursor
		if _, err := svc.QueueMessages(ctx, req); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "start again without cursor") {
			t.Errorf("queue %s, state %q, with a cursor of queue %s: %v; want ErrInvalid saying to start again", req.Queue, req.State, a, err)
		}
	}
}
