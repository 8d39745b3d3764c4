package ops_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

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
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor") {
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

// The instant a DLQ cursor of a filter by age pins is signed with the
// rest: a cursor whose pinned instant was changed, or with anything
// appended, is refused as one not issued here, with the first page of the
// same filters as the next step, where a suffix was ignored, read as an
// instant, or refused without a next step. The cursors as issued go on.
func TestDeadCursorsPinnedClockIsSigned(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 6, pgtest.DeadSpec{Kind: "k"})
	if _, err := s.DiscardDead(ctx, q, ids[:3]); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		op   string
		page func(f ops.DeadFilter, cursor string) (string, error)
	}{
		{ops.OpDLQList, func(f ops.DeadFilter, cursor string) (string, error) {
			p, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Cursor: cursor, Limit: 1})
			return p.NextCursor, err
		}},
		{ops.OpDLQDiscarded, func(f ops.DeadFilter, cursor string) (string, error) {
			p, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: f, Cursor: cursor, Limit: 1})
			return p.NextCursor, err
		}},
	} {
		plain, aged := ops.DeadFilter{Queue: q}, ops.DeadFilter{Queue: q, Since: "1h"}
		pc, err1 := l.page(plain, "")
		ac, err2 := l.page(aged, "")
		if err1 != nil || err2 != nil || pc == "" || ac == "" {
			t.Fatalf("%s first pages: cursors %q, %q, %v, %v", l.op, pc, ac, err1, err2)
		}
		for _, c := range []struct {
			f      ops.DeadFilter
			cursor string
		}{{plain, pc}, {aged, ac}} {
			if _, err := l.page(c.f, c.cursor); err != nil {
				t.Fatalf("%s after the cursor issued: %v", l.op, err)
			}
		}
		for _, c := range []struct {
			f      ops.DeadFilter
			cursor string
		}{
			{plain, pc + "~zz"},
			{aged, pc + "~1"},
			{aged, ac + "~1"},
			{plain, "abc~"},
			{aged, ""}, // ac with its pinned instant an hour earlier
		} {
			if c.cursor == "" {
				c.cursor = cursorPinnedAt(t, ac, -time.Hour)
			}
			_, err := l.page(c.f, c.cursor)
			if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "cursor is not valid here") {
				t.Errorf("%s, cursor %q: %v; want it refused as not valid here", l.op, c.cursor, err)
				continue
			}
			next := ops.NextSteps(err)
			if len(next) != 1 || next[0].Op != l.op || next[0].Args["cursor"] != nil || next[0].Args["queue"] != q || since(next[0]) != c.f.Since {
				t.Errorf("%s, cursor %q: next steps %+v; want the first page of the same filters", l.op, c.cursor, next)
			}
		}
	}
}

// since is the since argument of a next step, "" without one.
func since(h ops.Hint) string {
	s, _ := h.Args["since"].(string)
	return s
}

// cursorPinnedAt returns cursor with the instant it pins moved by d, its
// signature left as it was.
func cursorPinnedAt(t *testing.T, cursor string, d time.Duration) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	var c map[string]any
	if err != nil || json.Unmarshal(raw, &c) != nil {
		t.Fatalf("%q is not a DLQ cursor: %v", cursor, err)
	}
	p, ok := c["p"].(float64)
	if !ok {
		t.Fatalf("cursor %s pins no instant", raw)
	}
	c["p"] = int64(p) + d.Microseconds()
	raw, _ = json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(raw)
}
