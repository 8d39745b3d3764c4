package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// pgbus audit refuses a cursor of other filters, or one made by hand,
// naming as the command to run the first page of its own filters, all of
// them, in its words and in --json's next: run, it lists only what they
// select.
func TestAuditRefusedCursorNamesTheFirstPageOfItsFilters(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "queue", "pause", "orders")
	d.ok(t, "queue", "resume", "orders")
	d.ok(t, "queue", "pause", "orders")
	var every ops.AuditPage
	d.json(t, &every, "audit", "--client", "cli", "--limit", "1")
	if every.NextCursor == "" {
		t.Fatalf("audit of every operation: %+v; want a next_cursor", every)
	}
	const start = "pgbus audit --client cli --limit 1 --since 1h --tool queue_pause"
	for what, cursor := range map[string]string{"of other filters": every.NextCursor, "made by hand": "NQ"} {
		args := []string{"audit", "--tool", "queue_pause", "--client", "cli", "--since", "1h", "--limit", "1", "--cursor", cursor}
		if out := d.fails(t, 2, args...); !strings.Contains(out, "cursor") || !strings.HasSuffix(strings.TrimSpace(out), ": see "+start) {
			t.Errorf("a cursor %s: %q; want the refusal naming %q", what, out, start)
		}
		r := pgbus(t, d.env, append(args, "--json")...)
		if e := decodeErrorJSON(t, r); len(e.Next) != 1 || e.Next[0].Command != start {
			t.Errorf("a cursor %s, with --json: next %+v; want %q", what, e.Next, start)
		}
	}
	var page ops.AuditPage
	d.json(t, &page, strings.Fields(strings.TrimPrefix(start, "pgbus "))...)
	if len(page.Items) != 1 || page.Items[0].Op != ops.OpQueuePause || page.NextCursor == "" {
		t.Fatalf("%s: %+v; want the newest pause, and a next page", start, page)
	}
}
