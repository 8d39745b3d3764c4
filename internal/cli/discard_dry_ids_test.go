package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A dry run of a discard by ids lists the ids it would discard, says which
// it would not (an id in no DLQ) as the real call does, and names the real
// call: the same ids without --dry-run. It moves nothing.
func TestDiscardDryRunByIDsListsThemAndNamesTheRealCall(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ids := pgtest.DeadLetterN(t, s, "orders", 2, pgtest.DeadSpec{})
	missing := ids[1] + 1000
	a, b, m := fmt.Sprint(ids[0]), fmt.Sprint(ids[1]), fmt.Sprint(missing)

	out := d.ok(t, "dlq", "discard", a, b, "--queue", "orders", "--dry-run")
	want := "next: pgbus dlq discard " + a + " " + b + " --queue orders"
	if !strings.Contains(out, "would discard 2 dead messages") || !listed(out, a) || !listed(out, b) || !strings.Contains(out, want) {
		t.Errorf("dlq discard --dry-run by ids printed:\n%s\nwant ids %s and %s listed and %q", out, a, b, want)
	}

	r := pgbus(t, d.env, "dlq", "discard", a, m, "--queue", "orders", "--dry-run")
	if r.code != 3 || !strings.Contains(r.stdout, "would discard 1 dead message\n") || !listed(r.stdout, a) || listed(r.stdout, m) ||
		!strings.Contains(r.stderr, "not found: "+m) {
		t.Errorf("dlq discard --dry-run with an id in no DLQ: exit %d\nstdout: %s\nstderr: %s\nwant exit 3, %s listed and %s not found", r.code, r.stdout, r.stderr, a, m)
	}
	if got := pgtest.Live(t, s, "orders_dlq"); got != 2 {
		t.Errorf("the DLQ of orders holds %d after dry runs; want its 2", got)
	}
}

// listed reports whether out has a table row of the DLQ of orders and id.
func listed(out, id string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "orders_dlq" && f[1] == id {
			return true
		}
	}
	return false
}
