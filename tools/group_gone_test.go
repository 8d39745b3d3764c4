package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A group's key no DLQ holds any more (one saved before an upgrade
// regrouped error texts): a retry by it is a not_found error saying so,
// with the summary of the other filters as its next call; a list by it
// says so in a note, with the same next call. Nothing moves. Whether the
// key is held in another DLQ is read from every DLQ, on a database of the
// test's own: on the shared one, other tests' queues, made and dropped all
// the while, could cut every read of them short (the queues changed
// during the read) on a busy machine.
func TestGroupKeyHeldNowhereTools(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "mail", Class: "Bounce", Message: "mailbox full"})
	key := "9906b02f-1b2d-3e4f-8a9b-0c1d2e3f4a5b"
	words := []string{"no dead-letter group has key " + key + " any more", "an upgrade groups error texts differently", "list the groups"}
	summary := map[string]any{"queue": q, "kind": "mail"}

	args := map[string]any{"queue": q, "kind": "mail", "group": key, "limit": 100}
	text := e.callErr(t, "pgbus_dlq_retry", args, words...)
	if !strings.Contains(text, "pgbus_dlq_summary") {
		t.Errorf("retry by a key held nowhere: %q; want the summary named", text)
	}
	m := e.metaOf(t, "pgbus_dlq_retry", args)
	if m.Kind != "not_found" || !hasCall(m.Next, "pgbus_dlq_summary", summary) {
		t.Errorf("retry by a key held nowhere: _meta %+v; want not_found, with pgbus_dlq_summary %v next", m, summary)
	}

	page := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "kind": "mail", "group": key})
	if len(page.Items) != 0 || len(page.Notes) != 1 {
		t.Fatalf("list by a key held nowhere: %+v; want no message and one note", page)
	}
	for _, w := range words {
		if !strings.Contains(page.Notes[0], w) {
			t.Errorf("list by a key held nowhere: note %q does not say %q", page.Notes[0], w)
		}
	}
	if h, ok := findHint(page.Next, "pgbus_dlq_summary"); !ok || !jsonEqual(h.Args, summary) {
		t.Errorf("list by a key held nowhere: next %+v; want pgbus_dlq_summary %v", page.Next, summary)
	}
	var n int
	if err := e.st.Pool().QueryRow(testContext(t), `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d dead messages left (%v); want the 2 there were", n, err)
	}
}
