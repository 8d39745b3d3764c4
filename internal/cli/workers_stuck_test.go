package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus workers names, under its table, the handlers a running process
// gave up on for ignoring their context that still run, with their kinds
// escaped on the terminal; --json gives them on the process.
func TestWorkersNameStuckHandlers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	w := store.WorkerProcess{ID: "w-stuck", Hostname: "host-stuck", PID: 44, Queues: []string{"orders"}, Concurrency: 2, HeartbeatInterval: time.Hour,
		StuckCount: 3, StuckHandlers: []store.StuckHandler{{Queue: "orders", MsgID: 42, Kind: "charge\x1b[31m", GivenUpAt: time.Now().Add(-3 * time.Minute)}}}
	if err := s.HeartbeatWorker(pgtest.Context(t), w); err != nil {
		t.Fatal(err)
	}
	var ws ops.Workers
	d.json(t, &ws, "workers")
	if len(ws.Workers) != 1 || ws.Workers[0].StuckCount != 3 || len(ws.Workers[0].StuckHandlers) != 1 || ws.Workers[0].StuckHandlers[0].MsgID != 42 ||
		ws.Workers[0].StuckHandlers[0].StuckSeconds < 170 {
		t.Fatalf("workers --json: %+v; want the process with 3 stuck handlers, message 42 for about 3 minutes", ws)
	}
	out := d.ok(t, "workers")
	want := `stuck on host-stuck pid 44: 3 handlers still running past the timeout and grace, ignoring the context (each one's message hidden until it returns): message 42 of queue orders (kind "charge\x1b[31m") for 3m`
	if !strings.Contains(out, want) || !strings.Contains(out, "; and 2 more") || strings.Contains(out, "\x1b") {
		t.Errorf("workers lacks %q and the 2 more, or shows an escape sequence:\n%s", want, out)
	}
}
