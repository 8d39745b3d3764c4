package tools_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
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
		"cursor is not valid for this server; start again without cursor")
	next := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "limit": 1, "cursor": first.NextCursor})
	if len(next.Items) != 1 || next.Items[0].MsgID >= first.Items[0].MsgID {
		t.Fatalf("second page: %+v; want the next older message", next)
	}
}
