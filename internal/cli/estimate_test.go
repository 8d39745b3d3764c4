package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// Counts that are estimates are marked "~" in the queues table and the
// health line; exact ones beside them are not.
func TestEstimatedCountsAreMarked(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	stats := []ops.QueueStats{
		{Queue: "big", Depth: 4_000_010, Visible: 4_000_000, InFlight: 10, Archived: 7, TotalSent: 4_000_017, CountsEstimated: true},
		{Queue: "small", Depth: 3, Visible: 3, Archived: 2_000_000, ArchivedEstimated: true},
	}
	if err := (&app{}).writeQueueStats(&buf, stats); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if len(lines) < 3 {
		t.Fatalf("table:\n%s", buf.String())
	}
	big, small := strings.Fields(lines[1]), strings.Fields(lines[2])
	if big[1] != "~4000010" || big[2] != "~4000000" || big[3] != "10" || big[7] != "7" || big[8] != "4000017" {
		t.Errorf("row of an estimated queue: %q", lines[1])
	}
	if small[1] != "3" || small[2] != "3" || small[7] != "~2000000" {
		t.Errorf("row of a queue with an estimated archive: %q", lines[2])
	}

	buf.Reset()
	a := &app{stdout: &buf}
	if err := a.printHealth(ops.Health{Status: ops.HealthOK, Queues: new(2), Backlog: new(int64(4_000_003)), BacklogEstimated: true, DeadMessages: new(int64(0)), Workers: new(0)}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "OK: 2 queues, ~4000003 ready, 0 dead, 0 workers running\n") {
		t.Errorf("health line with an estimated backlog: %q", buf.String())
	}
}
