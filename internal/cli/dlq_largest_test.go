package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dlq list --order largest lists the largest payloads first, each
// with its size, --min-payload-bytes leaves out the smaller ones, and the
// command of the next page keeps both; an order it does not know is
// refused naming the flag.
func TestDLQListLargestFirst(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "uploads")
	var specs []pgtest.DeadSpec
	for _, n := range []int{10, 5000, 100, 3000, 2000} {
		specs = append(specs, pgtest.DeadSpec{Payload: fmt.Sprintf(`{"p": %q}`, strings.Repeat("x", n))})
	}
	ids := pgtest.DeadLetter(t, s, "uploads", specs...)

	out := d.ok(t, "dlq", "list", "--order", "largest", "--min-payload-bytes", "1000", "--limit", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "SIZE") {
		t.Fatalf("first page:\n%s\nwant a header with SIZE, 2 messages and a more: line", out)
	}
	for i, want := range []int64{ids[1], ids[3]} {
		if f := strings.Fields(lines[1+i]); f[0] != fmt.Sprint(want) || !strings.Contains(lines[1+i], " KiB") {
			t.Errorf("row %d: %q, want message %d with its size in KiB", i+1, lines[1+i], want)
		}
	}
	more, ok := strings.CutPrefix(lines[3], "more: pgbus ")
	if !ok || !strings.Contains(more, "--min-payload-bytes 1000 --order largest --limit 2 --cursor ") {
		t.Fatalf("more line %q does not keep the size and the order", lines[3])
	}
	next := d.ok(t, strings.Fields(more)...)
	rows := strings.Split(strings.TrimSpace(next), "\n")
	if len(rows) != 2 || strings.Fields(rows[1])[0] != fmt.Sprint(ids[4]) {
		t.Fatalf("next page:\n%s\nwant message %d alone, the last of at least 1000 bytes", next, ids[4])
	}

	if e := d.fails(t, 2, "dlq", "list", "--order", "biggest"); !strings.Contains(e, "--order") || !strings.Contains(e, "largest") {
		t.Errorf("an unknown order: %q, want --order named with the orders it takes", e)
	}
}
