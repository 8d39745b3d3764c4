package tools_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Over MCP, a tampered DLQ page cursor is a tool error (isError) that says
// to start again, not a protocol error.
func TestDLQListTamperedCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 3, pgtest.DeadSpec{Kind: "k"})
	first := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "limit": 1})
	if first.NextCursor == "" {
		t.Fatalf("first page has no cursor: %+v", first)
	}
	e.callErr(t, "pgbus_dlq_list", map[string]any{"queue": q, "limit": 1, "cursor": pgtest.TamperCursor(t, first.NextCursor)},
		"cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor")
	next := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "limit": 1, "cursor": first.NextCursor})
	if len(next.Items) != 1 || next.Items[0].MsgID >= first.Items[0].MsgID {
		t.Fatalf("second page: %+v; want the next older message", next)
	}
}

// A cursor pgbus_audit refuses (of other filters, or made by hand) names
// as its next step, in its text and its _meta, the first page of the
// call's own filters: followed, it lists only what they select.
func TestAuditRefusedCursorHintKeepsFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	now := time.Now()
	var entries []store.AuditEntry
	for i, op := range []string{ops.OpQueuePause, ops.OpQueuePause, ops.OpQueueResume} {
		entries = append(entries, store.AuditEntry{Client: client, Transport: "stdio", Tool: op, Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{}`),
			At: now.Add(time.Duration(i-5) * time.Minute)})
	}
	if err := e.st.RecordAudits(testContext(t), entries); err != nil {
		t.Fatal(err)
	}
	every := callOK[ops.AuditPage](t, e, "pgbus_audit", map[string]any{"client": client, "limit": 1})
	if every.NextCursor == "" {
		t.Fatalf("audit of every operation: %+v; want a next_cursor", every)
	}
	args := map[string]any{"tool": ops.OpQueuePause, "client": client, "since": "1h", "limit": 1}
	for what, cursor := range map[string]string{"of other filters": every.NextCursor, "made by hand": "NQ"} {
		if m := e.metaOf(t, "pgbus_audit", with(args, "cursor", cursor)); m.Kind != ops.KindInvalid || !hasCall(m.Next, "pgbus_audit", args) {
			t.Errorf("a cursor %s: %+v; want kind invalid and pgbus_audit %v next", what, m, args)
		}
		text := e.callErr(t, "pgbus_audit", with(args, "cursor", cursor), "cursor", "see pgbus_audit {")
		var named map[string]any
		if err := json.NewDecoder(strings.NewReader(text[strings.Index(text, "see pgbus_audit ")+len("see pgbus_audit "):])).Decode(&named); err != nil {
			t.Fatalf("the arguments %s names: %v", text, err)
		}
		page := callOK[ops.AuditPage](t, e, "pgbus_audit", named)
		if len(page.Items) != 1 || page.Items[0].Op != ops.OpQueuePause || page.Items[0].Client != client {
			t.Fatalf("a cursor %s: its next step %v, followed: %+v; want the newest pause", what, named, page.Items)
		}
	}
}
