//go:build linux || darwin

package runner_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
)

// The embedded workers of pgbus serve, whose start-up steps meet the
// database restarting, wait for it rather than stopping: once it is back
// they work the jobs sent then, and the process's health and /readyz do
// not say workers_stopped. They said it until the process restarted.
func TestBackgroundWorkersWaitForTheDatabaseAtStart(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	svc, err := ops.New(st, ops.Options{OwnWorkers: &ops.OwnWorkers{}})
	if err != nil {
		t.Fatal(err)
	}
	// Made beforehand, not declared: preparing it reads its stats, which
	// the outage fails and which leave it to the workers.
	q := config.WorkQueue{Name: pgtest.NewQueue(t, st, "bgstart"), Concurrency: 1, Handler: handlers.Spec{Type: handlers.TypeDemo}}
	works := []config.WorkQueue{q}
	mon := runner.NewMonitor(svc, nil, works)
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	stop, err := runner.Background(ctx, st, svc, works, engine.Config{DrainTimeout: 100 * time.Millisecond}, log, mon)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	pgtest.Eventually(t, time.Minute, "the workers to say they wait for the database", func() bool {
		if r, stopped := svc.StoppedWorkers(); stopped {
			t.Fatalf("the embedded workers stopped while the database restarted: %s\n%s", r.Message, logs.String())
		}
		return strings.Contains(logs.String(), "starting waits until it answers")
	})
	pgtest.StartCluster(t, dir)
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q.Name, Payload: []byte(`{"order_id": 1}`)}); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the job sent once the database was back done", func() bool {
		if r, stopped := svc.StoppedWorkers(); stopped {
			t.Fatalf("the embedded workers stopped: %s\n%s", r.Message, logs.String())
		}
		return pgtest.Archived(t, st, q.Name) == 1
	})
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.Reasons {
		if r.Code == "workers_stopped" {
			t.Errorf("health once the database is back: %s: %s; want the workers running", r.Code, r.Message)
		}
	}
	code, ready := readyz(t, serveMonitor(t, mon))
	if code != http.StatusOK || !ready.Ready {
		t.Errorf("/readyz once the database is back and the job done: %d %+v; want 200, ready\n%s", code, ready, logs.String())
	}
}
