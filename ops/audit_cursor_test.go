package ops_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// recordAudit writes entries of op for client, one at each time given.
func recordAudit(t *testing.T, s *store.Store, client, op string, at ...time.Time) {
	t.Helper()
	entries := make([]store.AuditEntry, len(at))
	for i, a := range at {
		entries[i] = store.AuditEntry{Client: client, Transport: "cli", Tool: op, Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{}`), At: a}
	}
	if err := s.RecordAudits(testContext(t), entries); err != nil {
		t.Fatal(err)
	}
}

// A cursor of an audit filtered by an age pins the clock of its first
// page, as the DLQ list's does: page 2 of "since 1h", followed as its
// next step names it, lists the same entries even when the clock has moved
// on so far that a fresh "since 1h" lists none.
func TestAuditCursorPinsTheClockOfAges(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	var clock atomic.Int64
	start := time.Now()
	clock.Store(start.UnixMicro())
	svc := newService(t, s, ops.Options{Now: func() time.Time { return time.UnixMicro(clock.Load()) }})
	client := uniqueName("agent") + "/1.0"
	recordAudit(t, s, client, ops.OpQueuePause, start.Add(-2*time.Hour), start.Add(-90*time.Minute))
	recordAudit(t, s, client, ops.OpQueuePause, start.Add(-5*time.Minute), start.Add(-4*time.Minute), start.Add(-3*time.Minute), start.Add(-2*time.Minute), start.Add(-time.Minute))

	req := ops.AuditRequest{Op: ops.OpQueuePause, Client: client, Since: "1h", Limit: 2}
	page, err := svc.Audit(ctx, req)
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", page, err)
	}
	seen := map[int64]bool{}
	for _, e := range page.Items {
		seen[e.ID] = true
	}
	clock.Add((3 * time.Hour).Microseconds())
	if fresh, err := svc.Audit(ctx, req); err != nil || len(fresh.Items) != 0 {
		t.Fatalf("a fresh audit 3 hours later = %+v, %v; want nothing (the clock moved)", fresh, err)
	}
	pages := 1
	for page.NextCursor != "" {
		h := findHint(t, page.Next, ops.OpAudit)
		if h.Args["since"] != "1h" || h.Args["cursor"] != page.NextCursor {
			t.Fatalf("page %d's next step %+v; want since 1h and the cursor %q", pages, h, page.NextCursor)
		}
		next := req
		next.Cursor = page.NextCursor
		if page, err = svc.Audit(ctx, next); err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		for _, e := range page.Items {
			if seen[e.ID] {
				t.Fatalf("entry %d listed twice", e.ID)
			}
			seen[e.ID] = true
		}
	}
	if pages != 3 || len(seen) != 5 {
		t.Fatalf("%d pages held %d entries; want 3 pages and the 5 of the last hour", pages, len(seen))
	}
	// A cursor with anything added is refused.
	abs, err := svc.Audit(ctx, ops.AuditRequest{Op: ops.OpQueuePause, Client: client, Limit: 2})
	if err != nil || abs.NextCursor == "" {
		t.Fatalf("audit without an age: cursor %q, %v", abs.NextCursor, err)
	}
	for _, c := range []string{abs.NextCursor + "~!!", abs.NextCursor + "~-5", "~"} {
		if _, err := svc.Audit(ctx, ops.AuditRequest{Op: ops.OpQueuePause, Client: client, Since: "1h", Cursor: c, Limit: 2}); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("cursor %q = %v, want ErrInvalid", c, err)
		}
	}
}

// An audit cursor holds its place only with the filters it was issued
// for, and only as this database's pgbus issued it, as the DLQ list's
// does: one of other filters (whose position would skip and repeat
// entries as if the page were right), one made by hand or changed, and
// one of another list are refused, saying what to do.
func TestAuditCursorIsSignedForItsFilters(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	now := time.Now()
	for i := range 3 {
		at := now.Add(time.Duration(i-10) * time.Minute)
		recordAudit(t, s, client, ops.OpQueuePause, at)
		recordAudit(t, s, client, ops.OpQueueResume, at.Add(time.Second))
	}
	pauses := ops.AuditRequest{Op: ops.OpQueuePause, Client: client, Since: "1h", Limit: 2}
	first, err := svc.Audit(ctx, pauses)
	if err != nil || len(first.Items) != 2 || first.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", first, err)
	}
	next := pauses
	next.Cursor = first.NextCursor
	if rest, err := svc.Audit(ctx, next); err != nil || len(rest.Items) != 1 || rest.Items[0].Op != ops.OpQueuePause {
		t.Fatalf("page 2 with the same filters = %+v, %v; want the third pause", rest, err)
	}

	const otherFilters = "cursor was issued for other filters; pass the same filters as the first page, or start again without cursor"
	storeCursor := first.NextCursor
	for _, c := range []struct {
		what string
		edit func(*ops.AuditRequest)
	}{
		{"another operation", func(r *ops.AuditRequest) { r.Op = ops.OpQueueResume }},
		{"every operation", func(r *ops.AuditRequest) { r.Op = ops.AuditAll }},
		{"another client", func(r *ops.AuditRequest) { r.Client = "cli" }},
		{"another age", func(r *ops.AuditRequest) { r.Since = "2h" }},
		{"no age", func(r *ops.AuditRequest) { r.Since = ""; r.Cursor = storeCursor }},
	} {
		req := next
		c.edit(&req)
		if _, err := svc.Audit(ctx, req); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), otherFilters) {
			t.Errorf("the cursor with %s: %v; want %q", c.what, err, otherFilters)
		}
	}

	// A position made by hand, or changed in a cursor issued, is not one
	// this server issued.
	raw, err := base64.RawURLEncoding.DecodeString(storeCursor)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("cursor %q: %v", storeCursor, err)
	}
	forge := func(key string, edit func(float64) float64) string {
		changed := maps.Clone(fields)
		v, ok := changed[key].(float64)
		if !ok {
			t.Fatalf("cursor %q has no number %q", storeCursor, key)
		}
		changed[key] = edit(v)
		b, _ := json.Marshal(changed)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	const notValid = "cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor"
	for what, cursor := range map[string]string{
		"made by hand":                  base64.RawURLEncoding.EncodeToString([]byte("5")),
		"with its position changed":     forge("i", func(v float64) float64 { return v + 2 }),
		"with its pinned clock changed": forge("p", func(v float64) float64 { return v - 1e6 }),
		"with the old clock suffix":     storeCursor + "~1",
	} {
		req := next
		req.Cursor = cursor
		if _, err := svc.Audit(ctx, req); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), notValid) {
			t.Errorf("a cursor %s: %v; want %q", what, err, notValid)
		}
	}

	// The DLQ list's cursors are not the audit log's, nor the audit
	// log's the DLQ list's.
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k"})
	dead, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1})
	if err != nil || dead.NextCursor == "" {
		t.Fatalf("dead list: %+v, %v", dead, err)
	}
	if _, err := svc.Audit(ctx, ops.AuditRequest{Cursor: dead.NextCursor}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), notValid) {
		t.Errorf("a DLQ list's cursor given to the audit: %v; want %q", err, notValid)
	}
	if _, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}, Cursor: storeCursor}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), notValid) {
		t.Errorf("an audit cursor given to the DLQ list: %v; want %q", err, notValid)
	}
}

// A refused audit cursor's next step is the first page of the call's own
// filters, all of them, as the DLQ list's is: without them it would list
// every operation of every client.
func TestAuditRefusedCursorHintKeepsFilters(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	now := time.Now()
	recordAudit(t, s, client, ops.OpQueuePause, now.Add(-3*time.Minute), now.Add(-2*time.Minute))
	recordAudit(t, s, client, ops.OpQueueResume, now.Add(-time.Minute))
	other, err := svc.Audit(ctx, ops.AuditRequest{Client: client, Limit: 1})
	if err != nil || other.NextCursor == "" {
		t.Fatalf("audit of every operation: %+v, %v", other, err)
	}
	for what, cursor := range map[string]string{
		"of other filters": other.NextCursor,
		"made by hand":     base64.RawURLEncoding.EncodeToString([]byte("5")),
		"with a bad clock": other.NextCursor + "~!!",
	} {
		req := ops.AuditRequest{Op: ops.OpQueuePause, Client: client, Since: "1h", Cursor: cursor, Limit: 1}
		_, err := svc.Audit(ctx, req)
		steps := ops.NextSteps(err)
		if !errors.Is(err, ops.ErrInvalid) || len(steps) != 1 {
			t.Fatalf("a cursor %s: %v, next %+v; want one next step", what, err, steps)
		}
		h := steps[0]
		want := map[string]any{"tool": req.Op, "client": client, "since": "1h", "limit": 1}
		if h.Op != ops.OpAudit || len(h.Args) != len(want) {
			t.Fatalf("a cursor %s: next %+v; want the audit with %v", what, h, want)
		}
		for k, v := range want {
			if h.Args[k] != v {
				t.Fatalf("a cursor %s: next %+v; want %s %v", what, h, k, v)
			}
		}
		// Followed, it lists the newest pause.
		page, err := svc.Audit(ctx, ops.AuditRequest{Op: h.Args["tool"].(string), Client: h.Args["client"].(string), Since: h.Args["since"].(string), Limit: h.Args["limit"].(int)})
		if err != nil || len(page.Items) != 1 || page.Items[0].Op != ops.OpQueuePause {
			t.Fatalf("the next step of a cursor %s, followed: %+v, %v; want the newest pause", what, page, err)
		}
	}
}
