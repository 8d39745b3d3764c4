package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A process's silence (SilentAge) counts from the later of its last
// heartbeat and the time the database has been up since: a heartbeat
// older than the database's start has been silent only since the start,
// one after it for its whole age. HeartbeatAge is its age either way.
func TestWorkerSilenceCountsWhileTheDatabaseWasUp(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	before, after := uniqueName("ws"), uniqueName("ws")
	for _, id := range []string{before, after} {
		if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "h", PID: 1, Queues: []string{"q"}, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// The database up since two hours ago; one heartbeat three hours ago,
	// before it, the other an hour ago, after it.
	var now time.Time
	if err := s.Pool().QueryRow(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - CASE id WHEN $1 THEN interval '3 hours' ELSE interval '1 hour' END
		WHERE id IN ($1, $2) RETURNING now()`, before, after).Scan(&now); err != nil {
		t.Fatal(err)
	}
	s.AssumeUpSince(now.Add(-2 * time.Hour))
	ws, err := s.ListWorkers(ctx, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]store.WorkerProcess{}
	for _, w := range ws {
		got[w.ID] = w
	}
	// Both ages are read at one time: they differ by the time between the
	// heartbeat and the database's start, when the heartbeat came first.
	check := func(id, what string, age, gap time.Duration) {
		w, ok := got[id]
		if d := w.HeartbeatAge - w.SilentAge - gap; !ok || w.HeartbeatAge < age || d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("the process whose heartbeat came %s the database's start: found %v, heartbeat age %s, silent %s; want an age of at least %s, silent %s less", what, ok, w.HeartbeatAge, w.SilentAge, age, gap)
		}
	}
	check(before, "before", 3*time.Hour, time.Hour)
	check(after, "after", time.Hour, 0)
}

// A crash loop records a process stopped on an error at each refused
// start: more than the list holds within an hour. A process running since
// before them is still listed, ahead of them all.
func TestRunningProcessListedPastACrashLoop(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "steady", Hostname: "a", PID: 1, Queues: []string{"orders"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET started_at = now() - interval '2 hours' WHERE id = 'steady'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency, started_at, heartbeat_at, stopped_at, stop_error)
		SELECT 'loop-'||i, 'b', i, '{orders}', 1, now() - interval '1 hour' + i * interval '3 seconds', now() - interval '1 hour' + i * interval '3 seconds',
		       now() - interval '1 hour' + i * interval '3 seconds', 'permission denied for table q_orders'
		FROM generate_series(1, $1) i`, store.MaxListedWorkers+200); err != nil {
		t.Fatal(err)
	}
	ws, err := s.ListWorkers(ctx, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) == 0 || ws[0].ID != "steady" {
		first := "none"
		if len(ws) > 0 {
			first = ws[0].ID
		}
		t.Fatalf("%d processes listed, the first %s; want the running process first, ahead of the crash loop's %d", len(ws), first, store.MaxListedWorkers+200)
	}
}
