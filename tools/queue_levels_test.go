package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// newLevelledQueue creates a queue with levels priority levels, dropped
// after the test, and returns its name.
func newLevelledQueue(t *testing.T, st *store.Store, levels int) string {
	t.Helper()
	q := uniqueName("tql")
	if err := st.CreatePriorityQueue(testContext(t), q, levels); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.DropQueue(context.Background(), q) })
	return q
}

// sendAt sends one message, named by its payload, to priority level level
// of queue, delayed by delay; it returns how the listing names it.
func sendAt(t *testing.T, st *store.Store, queue string, level int, name string, delay time.Duration) string {
	t.Helper()
	phys := store.PriorityQueueName(queue, level)
	ids, err := st.SendBatch(testContext(t), phys, []store.NewMessage{{Payload: json.RawMessage(fmt.Sprintf(`{"name": %q}`, name)), Delay: delay}})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%s:%d", level, phys, ids[0])
}

// levelledItems names the items of a page as sendAt does, checking that
// each says its level.
func levelledItems(t *testing.T, page ops.LiveMessages) []string {
	t.Helper()
	var out []string
	for _, m := range page.Items {
		if m.Priority == nil {
			t.Fatalf("message %d of %s does not say its level: %+v", m.MsgID, m.Queue, m)
		}
		out = append(out, fmt.Sprintf("%d:%s:%d", *m.Priority, m.Queue, m.MsgID))
	}
	return out
}

// allPages lists queue through pgbus_queue_messages page by page with
// args, and returns every item in the order listed and the number of
// pages.
func allPages(t *testing.T, e *env, args map[string]any) ([]string, int) {
	t.Helper()
	var out []string
	cursor, pages := "", 0
	for {
		a := map[string]any{}
		for k, v := range args {
			a[k] = v
		}
		if cursor != "" {
			a["cursor"] = cursor
		}
		page := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", a)
		out = append(out, levelledItems(t, page)...)
		pages++
		if cursor = page.NextCursor; cursor == "" {
			return out, pages
		}
		if pages > 20 {
			t.Fatalf("more than 20 pages of %v", args)
		}
	}
}

// pgbus_queue_messages on a queue with priority levels lists the messages
// of every level in the order workers read them, level 0 first and oldest
// first within a level, each with its level; its pages run across the
// levels, giving every message once; the state filter applies to every
// level; a level named alone lists that level; and a cursor of another
// list, or none at all, is refused saying to start again.
func TestQueueMessagesAcrossPriorityLevels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newLevelledQueue(t, e.st, 3)
	// Sent lowest level first, so that the order of the list is the
	// levels', not the order of sending.
	c0 := sendAt(t, e.st, q, 2, "c0", 0)
	b0 := sendAt(t, e.st, q, 1, "b0", 0)
	a0 := sendAt(t, e.st, q, 0, "a0", 0)
	c1 := sendAt(t, e.st, q, 2, "c1", time.Hour)
	b1 := sendAt(t, e.st, q, 1, "b1", time.Hour)
	a1 := sendAt(t, e.st, q, 0, "a1", 0)
	b2 := sendAt(t, e.st, q, 1, "b2", 0)
	want := []string{a0, a1, b0, b1, b2, c0, c1}

	page := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q})
	if got := levelledItems(t, page); !slices.Equal(got, want) || page.NextCursor != "" {
		t.Fatalf("messages of %s: %v (cursor %q), want %v", q, got, page.NextCursor, want)
	}
	for limit := 1; limit <= len(want); limit++ {
		got, pages := allPages(t, e, map[string]any{"queue": q, "limit": limit})
		if wantPages := (len(want) + limit - 1) / limit; !slices.Equal(got, want) || pages != wantPages {
			t.Errorf("pages of %d: %v in %d pages, want %v in %d", limit, got, pages, want, wantPages)
		}
	}

	// Level 0 has no scheduled message: a page of one starts at level 1
	// and ends at level 2.
	scheduled := []string{b1, c1}
	if got, pages := allPages(t, e, map[string]any{"queue": q, "state": "scheduled", "limit": 1}); !slices.Equal(got, scheduled) || pages != 2 {
		t.Errorf("scheduled messages, one a page: %v in %d pages, want %v in 2", got, pages, scheduled)
	}
	waiting := []string{a0, a1, b0, b2, c0}
	if got, pages := allPages(t, e, map[string]any{"queue": q, "state": "waiting", "limit": 2}); !slices.Equal(got, waiting) || pages != 3 {
		t.Errorf("waiting messages, two a page: %v in %d pages, want %v in 3", got, pages, waiting)
	}

	// One level named alone is listed alone, its messages still saying
	// their level.
	level1 := store.PriorityQueueName(q, 1)
	if got, pages := allPages(t, e, map[string]any{"queue": level1, "limit": 2}); !slices.Equal(got, []string{b0, b1, b2}) || pages != 2 {
		t.Errorf("messages of %s, two a page: %v in %d pages, want [%s %s %s] in 2", level1, got, pages, b0, b1, b2)
	}

	// A cursor of the whole queue in the middle of level 1, given with
	// another state or for level 1 alone, is refused; so is one of level 1
	// alone given for the whole queue, and one that is no cursor.
	first := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "limit": 3})
	ofLevel := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": level1, "limit": 1})
	if first.NextCursor == "" || ofLevel.NextCursor == "" {
		t.Fatalf("first pages have no cursor: %+v, %+v", first, ofLevel)
	}
	for _, args := range []map[string]any{
		{"queue": q, "state": "waiting", "cursor": first.NextCursor},
		{"queue": level1, "cursor": first.NextCursor},
		{"queue": q, "cursor": ofLevel.NextCursor},
	} {
		e.callErr(t, "pgbus_queue_messages", args, "cursor was issued for another queue or state", "start again without cursor")
	}
	e.callErr(t, "pgbus_queue_messages", map[string]any{"queue": q, "cursor": strings.Repeat("x", 22)}, "cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor")
	next := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "limit": 3, "cursor": first.NextCursor})
	if got := levelledItems(t, next); !slices.Equal(got, want[3:6]) {
		t.Errorf("the page after the first three: %v, want %v", got, want[3:6])
	}
}

// A level with no messages, between two that have some, is passed over
// by the pages, whichever level they end in.
func TestQueueMessagesPassOverAnEmptyLevel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newLevelledQueue(t, e.st, 4)
	want := []string{sendAt(t, e.st, q, 0, "a0", 0), sendAt(t, e.st, q, 0, "a1", 0), sendAt(t, e.st, q, 2, "c0", 0)}
	for limit := 1; limit <= 3; limit++ {
		got, pages := allPages(t, e, map[string]any{"queue": q, "limit": limit})
		if wantPages := (len(want) + limit - 1) / limit; !slices.Equal(got, want) || pages != wantPages {
			t.Errorf("pages of %d: %v in %d pages, want %v in %d", limit, got, pages, want, wantPages)
		}
	}
	if page := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": store.PriorityQueueName(q, 1)}); len(page.Items) != 0 || page.NextCursor != "" {
		t.Errorf("the empty level alone: %+v", page)
	}
	if page := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "in_flight"}); len(page.Items) != 0 || page.NextCursor != "" {
		t.Errorf("in-flight messages, of which there are none: %+v", page)
	}
}

// A message of a queue without priority levels says none, in JSON as in
// the result.
func TestQueueMessagesOfAPlainQueueSayNoLevel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	if _, err := e.st.SendBatch(testContext(t), q, []store.NewMessage{{Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	res := e.call(t, "pgbus_queue_messages", map[string]any{"queue": q})
	if res.IsError || !strings.Contains(resultText(res), `"msg_id"`) || strings.Contains(resultText(res), `"priority"`) {
		t.Fatalf("messages of plain queue %s: %s; want one message without a priority", q, resultText(res))
	}
}

// The dead messages of a priority level asked for by the level's name
// are refused, the next step being the same read of its queue, whose DLQ
// holds every level's.
func TestDeadReadOfALevelPointsAtItsQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newLevelledQueue(t, e.st, 2)
	for _, tool := range []string{"pgbus_dlq_list", "pgbus_dlq_summary"} {
		m := e.metaOf(t, tool, map[string]any{"queue": q + "_p1"})
		if m.Kind != ops.KindInvalid || len(m.Next) != 1 || m.Next[0].Tool != tool || m.Next[0].Arguments["queue"] != q {
			t.Errorf("%s of level 1 of %s: %+v; want kind invalid and %s of %s as the next step", tool, q, m, tool, q)
		}
	}
}
