package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pageHint is the next-page hint of op among hints: the one that carries
// a cursor; ok is false when there is none.
func pageHint(hints []ops.Hint, op string) (ops.Hint, bool) {
	for _, h := range hints {
		if _, ok := h.Args["cursor"]; ok && h.Op == op {
			return h, true
		}
	}
	return ops.Hint{}, false
}

// Following only the next-page hints of a list, from its first page to
// the page that gives none, shows every message once: each page with a
// next cursor gives the hint, not only a page cut to fit the response,
// after which a page of the smaller limit, not cut, gave none and left
// the rest unseen.
func TestNextPageHintsReachEveryMessage(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	const n = 150

	t.Run("dlq_list", func(t *testing.T) {
		q := newQueue(t, s, nil)
		ids := pgtest.DeadLetterN(t, s, q, n, pgtest.DeadSpec{Class: "net.Timeout", Message: "upstream timed out: " + strings.Repeat("x", 400)})
		seen := map[int64]int{}
		req := ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100}
		cut := false
		for pages := 1; ; pages++ {
			if pages > n {
				t.Fatalf("%d pages and still a next page", pages)
			}
			page, err := svc.DLQList(ctx, req)
			if err != nil {
				t.Fatalf("page %d (%+v): %v", pages, req, err)
			}
			if pages == 1 {
				cut = len(page.Items) < 100 && page.NextCursor != ""
			}
			for _, it := range page.Items {
				seen[it.MsgID]++
			}
			h, ok := pageHint(page.Next, ops.OpDLQList)
			if !ok {
				if page.NextCursor != "" {
					t.Fatalf("page %d has a next cursor but no next-page hint among %+v", pages, page.Next)
				}
				break
			}
			if h.Args["cursor"] != page.NextCursor {
				t.Fatalf("page %d: the next-page hint's cursor %v is not the page's next cursor %q", pages, h.Args["cursor"], page.NextCursor)
			}
			f, limit := hintFilter(t, h)
			req = ops.DLQListRequest{Filter: f, Cursor: fmt.Sprint(h.Args["cursor"]), Limit: limit}
		}
		if !cut {
			t.Fatalf("no page was cut to fit the response: the test pages nothing the way it means to")
		}
		for _, id := range ids {
			if seen[id] != 1 {
				t.Errorf("message %d seen %d times, want once", id, seen[id])
			}
		}
		if len(seen) != n {
			t.Errorf("saw %d messages, want the %d of %s", len(seen), n, q)
		}
	})

	t.Run("queue_messages", func(t *testing.T) {
		q := newLevelledQueue(t, s, svc)
		var want []int64
		for p := range 3 {
			msgs := make([]store.NewMessage, n/3)
			for i := range msgs {
				msgs[i] = store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(fmt.Sprintf(`{"trace_note":%q}`, strings.Repeat("y", 400)))}
			}
			ids, err := s.SendBatch(ctx, store.PriorityQueueName(q, p), msgs)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				want = append(want, int64(p)<<32|id)
			}
		}
		seen := map[int64]int{}
		req := ops.QueueMessagesRequest{Queue: q, Limit: 100}
		cut := false
		for pages := 1; ; pages++ {
			if pages > n {
				t.Fatalf("%d pages and still a next page", pages)
			}
			page, err := svc.QueueMessages(ctx, req)
			if err != nil {
				t.Fatalf("page %d (%+v): %v", pages, req, err)
			}
			if pages == 1 {
				cut = len(page.Items) < 100 && page.NextCursor != ""
			}
			for _, m := range page.Items {
				if m.Priority == nil {
					t.Fatalf("message %d has no priority level", m.MsgID)
				}
				seen[int64(*m.Priority)<<32|m.MsgID]++
			}
			h, ok := pageHint(page.Next, ops.OpQueueMessages)
			if !ok {
				if page.NextCursor != "" {
					t.Fatalf("page %d has a next cursor but no next-page hint among %+v", pages, page.Next)
				}
				break
			}
			if h.Args["cursor"] != page.NextCursor || h.Args["queue"] != q {
				t.Fatalf("page %d: the next-page hint %+v; want queue %s and the page's next cursor %q", pages, h, q, page.NextCursor)
			}
			limit, _ := h.Args["limit"].(int)
			state, _ := h.Args["state"].(string)
			req = ops.QueueMessagesRequest{Queue: q, State: state, Cursor: fmt.Sprint(h.Args["cursor"]), Limit: limit}
		}
		if !cut {
			t.Fatalf("no page was cut to fit the response: the test pages nothing the way it means to")
		}
		for _, k := range want {
			if seen[k] != 1 {
				t.Errorf("message %d of level %d seen %d times, want once", k&(1<<32-1), k>>32, seen[k])
			}
		}
		if len(seen) != len(want) {
			t.Errorf("saw %d messages, want the %d of %s", len(seen), len(want), q)
		}
	})
}
