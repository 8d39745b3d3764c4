package ops_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Workers gives the error a process stopped on, redacted and cut to
// WorkerStopErrorMax characters however long the stored one, so that a
// list of many stopped processes stays short; the health reason of each
// queue it served cuts it the same way, so that the health of many such
// queues stays short too.
func TestWorkersGiveTheStopErrorBounded(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	why := "engine: dsn postgres://app:pw-hunter2@db/orders refused; " + strings.Repeat("and more ", 150) + "the end"
	if err := s.StopWorkerOnError(ctx, store.WorkerProcess{ID: "w-long", Hostname: "h", PID: 1, Queues: []string{"orders"}, Concurrency: 1, HeartbeatInterval: time.Hour}, why); err != nil {
		t.Fatal(err)
	}
	ws, err := svc.Workers(ctx, ops.WorkersRequest{All: true})
	if err != nil || len(ws.Workers) != 1 {
		t.Fatalf("workers: %+v, %v", ws, err)
	}
	got := ws.Workers[0].StopError
	if n := utf8.RuneCountInString(got); n != ops.WorkerStopErrorMax || !strings.HasSuffix(got, "…") ||
		!strings.HasPrefix(got, "engine: dsn postgres://app:[REDACTED]@db/orders refused; and more") {
		t.Errorf("stop error listed (%d characters): %q; want it redacted and cut to %d", n, got, ops.WorkerStopErrorMax)
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range h.Reasons {
		if r.Code == "workers_stopped" {
			found = true
			if n := utf8.RuneCountInString(r.Message); n > ops.WorkerStopErrorMax+300 || strings.Contains(r.Message, "the end") ||
				!strings.Contains(r.Message, got) {
				t.Errorf("health reason (%d characters) %q: want the stop error cut as Workers lists it, %q", n, r.Message, got)
			}
		}
	}
	if !found {
		t.Errorf("health: %+v; want workers_stopped on queue orders", h.Reasons)
	}
}
