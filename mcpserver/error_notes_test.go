package mcpserver_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// The note of a list whose error messages were cut says how much showing
// one message gives, which cuts a long error too: an agent told it would
// read the whole error there would take a cut one for all of it.
func TestListNotesSayHowMuchShowGives(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	long := "charge failed: " + strings.Repeat("frame at pkg.fn(file.go:1) ", 200)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: long})

	var sum ops.DLQSummary
	structured(t, callTool(t, c, "pgbus_dlq_summary", map[string]any{"queue": q}), &sum)
	var list ops.DLQList
	structured(t, callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": q}), &list)
	var shown ops.DeadMessage
	structured(t, callTool(t, c, "pgbus_dlq_show", map[string]any{"queue": q, "msg_id": ids[0]}), &shown)
	got := utf8.RuneCountInString(shown.DeadLetter.ErrorMessage)
	if got >= utf8.RuneCountInString(long) {
		t.Fatalf("shown error has %d characters; want it cut below the %d of the error", got, len(long))
	}
	for what, notes := range map[string][]string{"summary": sum.Notes, "list": list.Notes} {
		joined := strings.Join(notes, "; ")
		if strings.Contains(joined, "whole") || !strings.Contains(joined, "up to 2000") {
			t.Errorf("%s notes %q; want how much showing one message gives (up to 2000), not the whole", what, joined)
		}
	}
}
