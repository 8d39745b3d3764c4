package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A page after a cursor that comes out empty, the messages after it
// having been discarded or restored meanwhile, says there are no more
// after the cursor, not that no message matches: the first page still
// lists some.
func TestEmptyPageAfterCursorSaysNoMore(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ids := pgtest.DeadLetterN(t, s, "orders", 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout"})

	var dead ops.DLQList
	d.json(t, &dead, "dlq", "list", "--queue", "orders", "--limit", "1")
	if len(dead.Items) != 1 || dead.NextCursor == "" {
		t.Fatalf("dlq list --limit 1 of 3: %+v; want one message and a cursor", dead)
	}
	var rest []string
	for _, id := range ids {
		if id != dead.Items[0].MsgID {
			rest = append(rest, fmt.Sprint(id))
		}
	}
	d.ok(t, append([]string{"dlq", "discard", "--queue", "orders", "--yes"}, rest...)...)
	out := d.ok(t, "dlq", "list", "--queue", "orders", "--limit", "1", "--cursor", dead.NextCursor)
	if !strings.Contains(out, "no more dead messages match after this cursor") || !strings.Contains(out, "without --cursor") {
		t.Errorf("dlq list after a cursor with nothing left after it printed:\n%s\nwant no more after this cursor, and to start again without --cursor", out)
	}

	var discarded ops.DLQDiscarded
	d.json(t, &discarded, "dlq", "discarded", "--queue", "orders", "--limit", "1")
	if len(discarded.Items) != 1 || discarded.NextCursor == "" {
		t.Fatalf("dlq discarded --limit 1 of 2: %+v; want one message and a cursor", discarded)
	}
	other := rest[0]
	if other == fmt.Sprint(discarded.Items[0].MsgID) {
		other = rest[1]
	}
	d.ok(t, "dlq", "restore", other, "--queue", "orders")
	out = d.ok(t, "dlq", "discarded", "--queue", "orders", "--limit", "1", "--cursor", discarded.NextCursor)
	if !strings.Contains(out, "no more discarded messages match after this cursor") || !strings.Contains(out, "without --cursor") {
		t.Errorf("dlq discarded after a cursor with nothing left after it printed:\n%s\nwant no more after this cursor, and to start again without --cursor", out)
	}
}
