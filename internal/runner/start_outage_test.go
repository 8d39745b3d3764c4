//go:build linux || darwin

package runner_test

import (
	"context"
	"errors"
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

// Preparing the queues of pgbus work or of serve's workers, which meets
// the database restarting, waits for it rather than failing: the queue
// the file declares is created once the database is back, and the wait is
// said once at WARN. Prepare failed at once, and the process ended.
func TestPrepareWaitsForTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dir, svc, q, logs, done := prepareWhileDown(t, ctx, "prepwait")
	pgtest.StartCluster(t, dir)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Prepare once the database is back: %v\n%s", err, logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("Prepare did not return once the database was back\n%s", logs.String())
	}
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name, NoArchive: true}); err != nil {
		t.Errorf("the declared queue once Prepare returned: %v; want it created", err)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings while the database was down; want one:\n%s", n, logs.String())
	}
}

// A stop while Prepare waits for a database that does not answer ends
// the wait at once, with the stop's error.
func TestStopEndsPreparesWaitForTheDatabase(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	defer cancel()
	_, _, _, _, done := prepareWhileDown(t, ctx, "prepstop")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Prepare stopped while waiting: %v; want context.Canceled", err)
		}
	case <-pgtest.Context(t).Done():
		t.Fatal("Prepare did not return once stopped while waiting for the database")
	}
}

// prepareWhileDown stops a private cluster, runs Prepare on a queue the
// file declares in the background, and returns once Prepare says it waits
// for the database: the cluster's directory, the service, the queue, the
// log, and where Prepare's error comes.
func prepareWhileDown(t *testing.T, ctx context.Context, prefix string) (string, *ops.Service, config.WorkQueue, *pgtest.SyncBuffer, <-chan error) {
	t.Helper()
	dir, cluster, st := pgtest.PrivateStore(t)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := config.WorkQueue{Name: pgtest.Name(prefix), Declared: true, Concurrency: 1, Handler: handlers.Spec{Type: handlers.TypeDemo}}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	logs := &pgtest.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	done := make(chan error, 1)
	go func() { done <- runner.Prepare(ctx, svc, []config.WorkQueue{q}, log) }()
	pgtest.Eventually(t, time.Minute, "Prepare to say it waits for the database", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Prepare returned while the database was down: %v\n%s", err, logs.String())
		default:
		}
		return strings.Contains(logs.String(), "starting waits until it answers")
	})
	return dir, svc, q, logs, done
}
