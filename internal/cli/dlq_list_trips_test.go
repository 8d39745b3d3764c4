package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dlq list says of a dead message retried out of a DLQ before how
// often, beside its attempts, so that one that keeps coming back shows at
// a glance; a message that died once says nothing more.
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
