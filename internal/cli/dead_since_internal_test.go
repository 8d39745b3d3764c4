package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// dlq show says the message died when the operation says it did, as
// --json and the dashboard do, also when its block's own time cannot be
// read (another client's, written without an offset).
func TestDeadSinceIsTheOperations(t *testing.T) {
	t.Parallel()
	died := time.Date(2026, 12, 7, 2, 14, 13, 0, time.UTC)
	a := &app{clock: func() time.Time { return died.Add(2 * time.Hour) }}
	m := ops.DeadMessage{DLQ: "orders_dlq", Queue: "orders", MsgID: 42, DeadLetteredAt: died,
		DeadLetter: &ops.DeadLetter{Reason: "max_retries_exceeded", SourceQueue: "orders", SourceMsgID: &[]int64{7}[0]}}
	var out bytes.Buffer
	if err := a.writeDeadMessage(&out, m, true); err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "dead since:") {
			line = l
		}
	}
	if !strings.Contains(line, "2026-12-07 02:14:13Z (2h ago)") {
		t.Errorf("dead since line %q; want 2026-12-07 02:14:13Z (2h ago), as --json says:\n%s", line, out.String())
	}
}
