//go:build linux || darwin

package ops_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// TestStaleCountsOnlyWhileTheDatabaseWasUp: a worker whose last heartbeat
// is older than its threshold but came before the database server started
// could not beat while the server was down, and is running until the
// threshold passes from the start; one whose last heartbeat came after the
// start and that stayed silent past its threshold crashed, and is stale.
func TestStaleCountsOnlyWhileTheDatabaseWasUp(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	st.AssumeUpSince(time.Time{}) // the server's own start, not pgtest's
	// The live process beats every 20 minutes: stale after an hour's
	// silence. The crashed one beats every millisecond.
	live := store.WorkerProcess{ID: "w-live", Hostname: "h", PID: 1, Queues: []string{"q"}, Concurrency: 1, HeartbeatInterval: 20 * time.Minute}
	crashed := store.WorkerProcess{ID: "w-crashed", Hostname: "h", PID: 2, Queues: []string{"q"}, Concurrency: 1, HeartbeatInterval: time.Millisecond}
	for _, w := range []store.WorkerProcess{live, crashed} {
		if err := st.RegisterWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// Its last heartbeat two hours ago, then the database goes down.
	if _, err := st.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '2 hours' WHERE id = 'w-live'`); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.StartCluster(t, dir)
	// The crashed process beat last as the server started and never again.
	pgtest.Eventually(t, time.Minute, "the crashed worker's heartbeat set to the server's start", func() bool {
		_, err := st.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = pg_catalog.pg_postmaster_start_time() WHERE id = 'w-crashed'`)
		return err == nil
	})
	pgtest.Eventually(t, time.Minute, "the server up past the crashed worker's threshold", func() bool {
		var up bool
		err := st.Pool().QueryRow(ctx, `SELECT now() > pg_catalog.pg_postmaster_start_time() + interval '10 milliseconds'`).Scan(&up)
		return err == nil && up
	})

	svc := newService(t, st, ops.Options{StaleAfter: time.Millisecond})
	ws, err := svc.Workers(ctx, ops.WorkersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]ops.WorkerStatus{}
	for _, w := range ws.Workers {
		status[w.ID] = w
	}
	if w := status["w-live"]; w.Status != ops.WorkerRunning || w.HeartbeatAgeSeconds < 7200 {
		t.Errorf("the worker that beat before the server started: %s, heartbeat %.0fs ago; want running, its heartbeat two hours ago", w.Status, w.HeartbeatAgeSeconds)
	}
	if w := status["w-crashed"]; w.Status != ops.WorkerStale {
		t.Errorf("the worker silent since the server started: %s; want stale", w.Status)
	}
	if ws.Running != 1 || ws.Stale != 1 {
		t.Errorf("running %d, stale %d; want 1 and 1", ws.Running, ws.Stale)
	}
}
