package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus workers says why a process stopped on an error, in its table and
// in --json, redacted as it was stored and escaped on the terminal: a
// person saw it stopped but not why.
func TestWorkersSayWhyOneStopped(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	why := "engine: queue \"orders\": permission denied for table q_orders \x1b[31m; dsn postgres://app:pw-hunter2@db/orders"
	if err := s.StopWorkerOnError(pgtest.Context(t), store.WorkerProcess{ID: "w-denied", Hostname: "host-denied", PID: 43, Queues: []string{"orders"}, Concurrency: 1, HeartbeatInterval: time.Hour}, why); err != nil {
		t.Fatal(err)
	}
	var ws ops.Workers
	d.json(t, &ws, "workers")
	if len(ws.Workers) != 1 || ws.Workers[0].Status != ops.WorkerStopped || !strings.Contains(ws.Workers[0].StopError, "permission denied for table q_orders") ||
		!strings.Contains(ws.Workers[0].StopError, "[REDACTED]") || strings.Contains(ws.Workers[0].StopError, "pw-hunter2") {
		t.Fatalf("workers --json: %+v; want the process stopped, with its error redacted", ws)
	}
	table := d.ok(t, "workers")
	for _, want := range []string{"STOP ERROR", `engine: queue "orders": permission denied for table q_orders \u001b[31m`} {
		if !strings.Contains(table, want) {
			t.Errorf("workers table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "pw-hunter2") || strings.Contains(table, "\x1b") {
		t.Errorf("workers table shows the password or an escape sequence:\n%s", table)
	}
}
