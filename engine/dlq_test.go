package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// dlqLoad sends n messages to queue and dead-letters them in one call.
func dlqLoad(t testing.TB, s *store.Store, queue string, n int) []store.DeadLettered {
	t.Helper()
	ctx := testContext(t)
	batch := make([]store.NewMessage, n)
	for i := range batch {
		batch[i] = store.NewMessage{Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	ids, err := s.SendBatch(ctx, queue, batch)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]store.DeadLetterItem, n)
	for i, id := range ids {
		items[i] = store.DeadLetterItem{MsgID: id, Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "bad"}}
	}
	moved, err := s.DeadLetterMany(ctx, queue, store.DLQName(queue), store.SourceWorker, items)
	if err != nil || len(moved) != n {
		t.Fatalf("dead-letter %d: %d, %v", n, len(moved), err)
	}
	return moved
}

func TestDLQDefaults(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	d := engine.NewDLQ(s)
	q := newQueue(t, s, nil)
	dlqLoad(t, s, q, engine.DefaultDLQBulkLimit+5)

	page, err := d.List(ctx, store.DeadFilter{Queue: q}, "", 0)
	if err != nil || len(page.Items) != engine.DefaultDLQPageSize || page.NextCursor == "" {
		t.Fatalf("list with limit 0 = %d items, cursor %q, %v; want %d and a cursor", len(page.Items), page.NextCursor, err, engine.DefaultDLQPageSize)
	}
	n, err := d.DiscardMatching(ctx, store.DeadFilter{Queue: q}, 0)
	if err != nil || n != engine.DefaultDLQBulkLimit {
		t.Fatalf("discard matching with limit 0 = %d, %v; want %d", n, err, engine.DefaultDLQBulkLimit)
	}
	rep, err := d.RetryMatching(ctx, store.DeadFilter{Queue: q}, 0, store.RetryOptions{DryRun: true})
	if err != nil || rep.Retried != 5 || live(t, s, q+"_dlq") != 5 {
		t.Fatalf("dry-run retry of the rest = %+v, %v", rep, err)
	}
	purged, err := d.Purge(ctx, q, 0)
	if err != nil || purged != engine.DefaultDLQBulkLimit {
		t.Fatalf("purge = %d, %v", purged, err)
	}
}

func TestDLQLocate(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	d := engine.NewDLQ(s)
	qa, qb := newQueue(t, s, nil), newQueue(t, s, nil)
	a := dlqLoad(t, s, qa, 2)
	b := dlqLoad(t, s, qb, 1)
	// Fresh DLQs both start at id 1.
	if a[0].DLQMsgID != b[0].DLQMsgID && a[1].DLQMsgID != b[0].DLQMsgID {
		t.Fatalf("ids %v and %v share none", a, b)
	}
	_, err := d.Locate(ctx, "", b[0].DLQMsgID)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "pass queue:") || !strings.Contains(err.Error(), qa+"_dlq") || !strings.Contains(err.Error(), qb+"_dlq") {
		t.Fatalf("locate an id in two DLQs: %v", err)
	}
	if got, err := d.Locate(ctx, qb, b[0].DLQMsgID); err != nil || got != qb {
		t.Fatalf("locate with queue = %q, %v", got, err)
	}
	other := a[0].DLQMsgID + a[1].DLQMsgID - b[0].DLQMsgID // qa's id that qb lacks
	found, err := d.Find(ctx, other)
	if err != nil || !strings.Contains(strings.Join(found, ","), qa+"_dlq") || strings.Contains(strings.Join(found, ","), qb+"_dlq") {
		t.Fatalf("find %d = %v, %v", other, found, err)
	}
	if _, err := d.Locate(ctx, "", 1<<62); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("locate a missing id: %v", err)
	}
}

// A message a handler refuses dies in the DLQ through a real worker, is
// inspected and retried through engine.DLQ, and then succeeds.
func TestDLQRoundTripThroughWorker(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	d := engine.NewDLQ(s)
	q := newQueue(t, s, nil)
	c := newClient(t, s, q, nil)
	var fixed atomic.Bool
	var succeeded atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		if !fixed.Load() {
			return engine.NonRetryable(errors.New("the downstream refused the order"))
		}
		succeeded.Add(1)
		return nil
	})
	start(t, c)
	send(t, c, q, map[string]int{"order": 7}, engine.SendOptions{})

	var item store.DeadItem
	eventually(t, 10*time.Second, "the message in the DLQ", func() bool {
		page, err := d.List(ctx, store.DeadFilter{Queue: q}, "", 0)
		if err != nil || len(page.Items) != 1 {
			return false
		}
		item = page.Items[0]
		return true
	})
	if item.Reason != store.ReasonNonRetryable || item.SourceQueue != q || !strings.Contains(item.ErrorMessage, "refused the order") {
		t.Fatalf("dead item = %+v", item)
	}
	m, err := d.Show(ctx, q, item.MsgID)
	if err != nil || m.Block == nil || m.Block.Source != store.SourceWorker || m.Block.Attempts != 1 || len(m.History) != 1 || string(m.Payload) != `{"order": 7}` {
		t.Fatalf("show = %+v, %v", m, err)
	}
	groups, err := d.Summary(ctx, store.DeadFilter{Queue: q})
	if err != nil || len(groups) != 1 || groups[0].Count != 1 || groups[0].SampleMsgIDs[0] != item.MsgID {
		t.Fatalf("summary = %+v, %v", groups, err)
	}

	fixed.Store(true)
	rep, err := d.Retry(ctx, q, []int64{item.MsgID}, store.RetryOptions{})
	if err != nil || rep.Retried != 1 || rep.Moved[0].Queue != q {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	eventually(t, 10*time.Second, "the retried message to succeed", func() bool { return succeeded.Load() == 1 && archived(t, s, q) == 1 })
	if live(t, s, q+"_dlq") != 0 {
		t.Fatal("the DLQ still holds the message")
	}
	if n := count(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE (headers->>'pgbus_dlq_retries')::int = 1 AND NOT headers ? 'pgbus_dead_letter'`); n != 1 {
		t.Fatalf("%d archived messages carry one trip and no block, want 1", n)
	}
	if _, err := d.Discard(ctx, q, []int64{item.MsgID}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("discard of a retried message: %v", err)
	}
}
