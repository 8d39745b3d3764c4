package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// pgbus queues counts in SENT the messages sent to a queue since it was
// created: a queue dropped and created again counts its own alone, and
// its help says so rather than "ever".
func TestQueuesSentCountsSinceTheQueueWasCreated(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", `{"n": 1}`)
	d.ok(t, "send", "orders", `{"n": 2}`)
	d.ok(t, "queue", "drop", "orders", "--yes")
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", `{"n": 3}`)
	var stats ops.QueueStatsResult
	d.json(t, &stats, "queues", "orders")
	if len(stats.Queues) != 1 || stats.Queues[0].TotalSent != 1 {
		t.Fatalf("queues orders --json = %+v; want total_sent 1, the send since it was created again", stats.Queues)
	}
	help := d.ok(t, "queues", "--help")
	if !strings.Contains(help, "SENT        messages sent to it since it was created") || strings.Contains(help, "ever sent") {
		t.Errorf("pgbus queues --help:\n%s\nwant SENT said to count since the queue was created", help)
	}
}
