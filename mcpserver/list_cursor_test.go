package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// A cursor pgbus_dlq_list refuses (issued for other filters) is answered
// with the first page of the call's own filters: the hint, followed as
// given, lists only the messages those filters select.
func TestDLQListRefusedCursorHintKeepsFilters(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "timed out"})
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "refund", Class: "Timeout", Message: "timed out"})

	var first ops.DLQList
	structured(t, callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": q, "kind": "charge", "limit": 1}), &first)
	if first.NextCursor == "" {
		t.Fatalf("first page = %+v; want a next_cursor", first)
	}
	res := callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": q, "kind": "refund", "limit": 1, "cursor": first.NextCursor})
	wantToolError(t, "cursor of other filters", res, "other filters", `"kind":"refund"`)

	// The hint's arguments, as the error renders them after "see ".
	text := resultText(res)
	args := text[strings.Index(text, "see pgbus_dlq_list ")+len("see pgbus_dlq_list "):]
	var page ops.DLQList
	structured(t, callTool(t, c, "pgbus_dlq_list", jsonArgs(t, args)), &page)
	if len(page.Items) != 1 || page.Items[0].Kind != "refund" {
		t.Fatalf("the hint %s, followed = %+v; want the first refund", args, page.Items)
	}
}

// jsonArgs decodes the JSON arguments of a tool call an error names.
func jsonArgs(t *testing.T, text string) map[string]any {
	t.Helper()
	var args map[string]any
	if err := json.NewDecoder(strings.NewReader(text)).Decode(&args); err != nil {
		t.Fatalf("arguments %q: %v", text, err)
	}
	return args
}
