package ops_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The messages a handler's rule discarded from a queue (engine.Discard,
// on_status), kept in the queue's archive marked pgbus_discarded and never
// dead-lettered, are listed by DLQDiscarded with ByHandler: those of every
// priority level, newest first, by page, filtered by kind and error class,
// each with its error and the queue whose archive holds it, none
// restorable. Without ByHandler the list is the DLQ's archive, as before.
func TestDLQDiscardedByHandlerListsTheQueuesDiscards(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := uniqueName("hd")
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 2}); err != nil {
		t.Fatal(err)
	}
	level0, level1 := store.PriorityQueueName(q, 0), store.PriorityQueueName(q, 1)
	sent, err := s.SendBatch(ctx, level0, []store.NewMessage{{Payload: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	moved, err := s.DeadLetterMany(ctx, level0, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: sent[0],
		Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "smtp.Timeout"}}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter = %v, %v", moved, err)
	}
	dead := []int64{moved[0].DLQMsgID}
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: dead, Filter: ops.DeadFilter{Queue: q}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	first := pgtest.HandlerDiscard(t, s, level0, 1, pgtest.DeadSpec{Kind: "mail", Class: "http.404", Message: "no such mailbox"})
	second := pgtest.HandlerDiscard(t, s, level1, 1, pgtest.DeadSpec{Kind: "sms", Class: "http.410", Message: "number gone"})

	all, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}, ByHandler: true})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("discarded by handler = %+v, %v; want the 2 messages handlers discarded", all, err)
	}
	for i, want := range []struct {
		id                      int64
		queue, kind, class, msg string
	}{{second[0], level1, "sms", "http.410", "number gone"}, {first[0], level0, "mail", "http.404", "no such mailbox"}} {
		it := all.Items[i]
		if it.MsgID != want.id || it.Queue != want.queue || it.DLQ != "" || it.Kind != want.kind || it.ErrorClass != want.class ||
			it.ErrorMessage != want.msg || it.Reason != ops.ReasonDiscardedByHandler || it.Restorable || it.DiscardedAt.IsZero() {
			t.Errorf("item %d = %+v; want message %d of %s, kind %s, %s: %s, discarded by its handler, not restorable", i, it, want.id, want.queue, want.kind, want.class, want.msg)
		}
	}
	for _, h := range all.Next {
		if h.Op == ops.OpDLQRestore {
			t.Errorf("next %+v: no restore brings back what a handler discarded", all.Next)
		}
	}

	page, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}, ByHandler: true, Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].MsgID != second[0] || page.NextCursor == "" ||
		!hasHint(page.Next, ops.OpDLQDiscarded, map[string]any{"queue": q, "by_handler": true, "cursor": page.NextCursor}) {
		t.Fatalf("first page of one = %+v, %v; want the newest, a cursor and the next page's step", page, err)
	}
	rest, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}, ByHandler: true, Limit: 1, Cursor: page.NextCursor})
	if err != nil || len(rest.Items) != 1 || rest.Items[0].MsgID != first[0] || rest.NextCursor != "" {
		t.Fatalf("second page = %+v, %v; want the older one, and no further page", rest, err)
	}
	if _, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1, Cursor: page.NextCursor}); err == nil {
		t.Error("the cursor of a list by handler was taken for a list of the DLQ's archive")
	}
	byClass, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q, ErrorClass: "http.404", Kind: "mail"}, ByHandler: true})
	if err != nil || len(byClass.Items) != 1 || byClass.Items[0].MsgID != first[0] {
		t.Fatalf("discarded by handler of class http.404 = %+v, %v; want the one", byClass, err)
	}

	dlq, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(dlq.Items) != 1 || dlq.Items[0].MsgID != dead[0] || dlq.Items[0].DLQ != store.DLQName(q) || !dlq.Items[0].Restorable {
		t.Fatalf("discarded from the DLQ = %+v, %v; want the one discarded from %s, restorable", dlq, err, store.DLQName(q))
	}
	if _, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: "nosuch_" + q}, ByHandler: true}); ops.ErrorKind(err) != ops.KindNotFound {
		t.Errorf("discarded by handler of a queue that does not exist: %v (kind %s); want not found", err, ops.ErrorKind(err))
	}
}
