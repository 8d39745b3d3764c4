package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// Counts of one read in the singular: the summary of a DLQ holding one
// dead message, and the health of one queue, then with one message ready
// and no worker.
func TestCountsOfOneReadInTheSingular(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	id := pgtest.DeadLetterN(t, s, "orders", 1, pgtest.DeadSpec{})[0]

	if out := d.ok(t, "dlq", "summary", "--queue", "orders"); !strings.Contains(out, "\n1 dead message in 1 group\n") {
		t.Errorf("dlq summary of one dead message:\n%s\nwant it counted as 1 dead message in 1 group", out)
	}
	if out := d.ok(t, "health"); !strings.Contains(out, ": 1 queue, 0 ready, 1 dead, 0 workers running\n") {
		t.Errorf("health with one queue:\n%s\nwant 1 queue counted in the singular", out)
	}

	d.ok(t, "dlq", "retry", fmt.Sprint(id), "--queue", "orders")
	out := d.ok(t, "health")
	if !strings.Contains(out, `queue "orders": 1 message ready, 0 waiting to retry;`) {
		t.Errorf("health with one message ready and no worker:\n%s\nwant 1 message ready", out)
	}
}
