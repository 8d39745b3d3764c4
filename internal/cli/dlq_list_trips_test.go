package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dlq list says of a dead message retried out of a DLQ before how
// often, beside its attempts, so that one that keeps coming back shows at
// a glance, and pgbus dlq summary says so of a group by its newest
// message; a message that died once says nothing more.
func TestDLQListShowsRetriesFromDLQ(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ids := pgtest.DeadLetter(t, s, "orders",
		pgtest.DeadSpec{Kind: "once"},
		pgtest.DeadSpec{Kind: "twice", Headers: `{"pgbus_kind": "twice", "pgbus_dlq_retries": 1}`},
		pgtest.DeadSpec{Kind: "thrice", Headers: `{"pgbus_kind": "thrice", "pgbus_dlq_retries": 2}`})

	out := d.ok(t, "dlq", "list", "--queue", "orders")
	want := map[int64]string{ids[0]: "/5 ", ids[1]: "/5 after 1 DLQ retry ", ids[2]: "/5 after 2 DLQ retries "}
	for id, cell := range want {
		line := lineOf(out, fmt.Sprint(id)+" ")
		if !strings.Contains(line, cell) || (id == ids[0] && strings.Contains(line, "after")) {
			t.Errorf("dlq list, message %d: %q; want %q\n%s", id, line, cell, out)
		}
	}
	// The summary says which groups came back, by their newest message.
	sum := d.ok(t, "dlq", "summary", "--queue", "orders")
	for _, want := range []string{
		fmt.Sprintf("came back: orders twice E: its newest message, %d, died again after 1 DLQ retry\n", ids[1]),
		fmt.Sprintf("came back: orders thrice E: its newest message, %d, died again after 2 DLQ retries\n", ids[2]),
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("dlq summary:\n%s\nwant the line %q", sum, want)
		}
	}
	if strings.Count(sum, "came back:") != 2 {
		t.Errorf("dlq summary:\n%s\nwant 2 groups said to have come back, not the one that died once", sum)
	}
	// A retry's preview counts the messages that came back.
	if out := d.ok(t, "dlq", "retry-all", "--queue", "orders", "--dry-run"); !strings.Contains(out, "note: 2 of these messages have been retried out of a DLQ before and died again") {
		t.Errorf("dlq retry-all --dry-run:\n%s\nwant the 2 messages that came back counted", out)
	}
	if out := d.ok(t, "dlq", "retry", fmt.Sprint(ids[0]), "--queue", "orders", "--dry-run"); strings.Contains(out, "retried out of a DLQ before") {
		t.Errorf("dlq retry --dry-run of a message that died once:\n%s\nwant no comeback said", out)
	}
}

// lineOf is the line of out that starts with prefix, or "".
func lineOf(out, prefix string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
