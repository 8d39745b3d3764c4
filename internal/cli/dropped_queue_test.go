package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A queue dropped outside pgbus (PGMQ's drop_queue) with dead messages
// left in its DLQ is in pgbus queues, marked dropped with its DLQ's depth,
// and pgbus health names it with the commands that deal with it: creating
// it again makes its dead messages retryable.
func TestDroppedQueueWithDeadMessagesIsShown(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "kept")
	pgtest.CreateQueue(t, s, "orphan")
	pgtest.DeadLetterN(t, s, "orphan", 2, pgtest.DeadSpec{Class: "http.503"})
	pgtest.DropOutside(t, s, "orphan")
	out := d.ok(t, "queues")
	var row string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "orphan") {
			row = line
		}
	}
	if f := strings.Fields(row); len(f) < 8 || f[1] != "(dropped)" || f[7] != "2" || !strings.Contains(out, "kept") {
		t.Fatalf("pgbus queues printed:\n%s\nwant a row orphan (dropped) with 2 in its DLQ column, and kept", out)
	}
	out = d.ok(t, "health")
	for _, want := range []string{`queue "orphan" was dropped but its DLQ orphan_dlq holds 2 dead messages`, "pgbus queue create orphan", "pgbus dlq discard --dry-run --limit 2 --queue orphan"} {
		if !strings.Contains(out, want) {
			t.Errorf("pgbus health printed:\n%s\nwant %q", out, want)
		}
	}
	if out := d.ok(t, "queues", "orphan"); !strings.Contains(out, "orphan (dropped)") {
		t.Errorf("pgbus queues orphan printed:\n%s\nwant its row, marked dropped", out)
	}
	d.ok(t, "queue", "create", "orphan")
	out = d.ok(t, "dlq", "retry-all", "--queue", "orphan", "--yes")
	if pgtest.Live(t, s, "orphan") != 2 || pgtest.Live(t, s, "orphan_dlq") != 0 {
		t.Fatalf("after creating the queue again, retry-all printed:\n%s\nand %d are live, %d dead; want 2 and 0", out, pgtest.Live(t, s, "orphan"), pgtest.Live(t, s, "orphan_dlq"))
	}
}
