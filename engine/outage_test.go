//go:build linux || darwin

package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A database stopped under running workers is said once in their log, not
// at every retry of every loop, and its return is said too; the job that
// ran across the outage is written once it is back, and runs once.
func TestOutageLoggedOnceAndItsEnd(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, st := outageStore(t)
	const queue = "outage"

	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var mu sync.Mutex
	runs := map[int64]int{}
	started, release := make(chan struct{}), make(chan struct{})
	c := pgtest.NewClient(t, st, queue, func(c *engine.Config) { c.Logger = log })
	c.Handle("held", func(ctx context.Context, job *engine.Job) error {
		mu.Lock()
		runs[job.ID]++
		first := runs[job.ID] == 1
		mu.Unlock()
		if first {
			close(started)
			<-release
		}
		return nil
	})
	c.Handle("after", func(_ context.Context, job *engine.Job) error {
		mu.Lock()
		runs[job.ID]++
		mu.Unlock()
		return nil
	})
	pgtest.Start(t, c)
	held := pgtest.Send(t, c, queue, map[string]int{"n": 1}, engine.SendOptions{Kind: "held"})
	<-started

	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	close(release) // the job ends while the database is down: its outcome waits
	pgtest.Eventually(t, 30*time.Second, "the outage logged", func() bool {
		return strings.Contains(logs.String(), "the database does not answer")
	})
	// Let every loop (reads, the listener, the outcome writer, the
	// background tasks) fail and retry several times before the server
	// comes back.
	time.Sleep(3 * time.Second)
	pgtest.StartCluster(t, dir)

	after := pgtest.Send(t, c, queue, map[string]int{"n": 2}, engine.SendOptions{Kind: "after"})
	pgtest.Eventually(t, time.Minute, "both messages archived", func() bool { return pgtest.Archived(t, st, queue) == 2 })
	pgtest.Eventually(t, 30*time.Second, "the return logged", func() bool {
		return strings.Contains(logs.String(), "the database answers again")
	})

	out := logs.String()
	var warns []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warns = append(warns, line)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "the database does not answer") {
		t.Errorf("the outage took %d warnings, want the one line that says the database does not answer:\n%s", len(warns), out)
	}
	if n := strings.Count(out, "the database answers again"); n != 1 {
		t.Errorf("the return logged %d times, want once:\n%s", n, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs[held] != 1 || runs[after] != 1 {
		t.Errorf("runs: the job across the outage %d, the one after it %d; want each once", runs[held], runs[after])
	}
}

// Once the database answers again, the process's heartbeat is written at
// once, not at its next interval: its row went stale during the outage,
// and until the next beat the process's own probes saw no running worker
// for its queues (STALLED, no_workers) while it worked them. The beat here
// is hourly, so only the end of the outage writes it.
func TestHeartbeatWrittenWhenAnOutageEnds(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, st := outageStore(t)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, st, "outage", func(c *engine.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.ProcessHeartbeat = time.Hour
	})
	c.HandleQueue("outage", func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the process registered", func() bool {
		return pgtest.Int(t, st, `SELECT count(*) FROM pgbus.workers WHERE id = $1`, c.ID()) == 1
	})
	var before time.Time
	if err := st.Pool().QueryRow(ctx, `SELECT heartbeat_at FROM pgbus.workers WHERE id = $1`, c.ID()).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "the outage logged", func() bool {
		return strings.Contains(logs.String(), "the database does not answer")
	})
	pgtest.StartCluster(t, dir)
	pgtest.Eventually(t, time.Minute, "the heartbeat written after the outage", func() bool {
		return pgtest.Int(t, st, `SELECT count(*) FROM pgbus.workers WHERE id = $1 AND heartbeat_at > $2`, c.ID(), before) == 1
	})
}

// While every queue is paused nothing is read, and the workers' heartbeat
// still sees the database answer again, so that the next outage is told
// as the first was.
func TestOutageEndSeenWhilePaused(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, st := outageStore(t)
	const queue = "outage"
	if _, err := st.SetPaused(ctx, queue, true); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := pgtest.NewClient(t, st, queue, func(c *engine.Config) { c.Logger = log; c.ProcessHeartbeat = 100 * time.Millisecond })
	c.HandleQueue(queue, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the worker registered", func() bool {
		return pgtest.Int(t, st, `SELECT count(*) FROM pgbus.workers WHERE stopped_at IS NULL`) == 1
	})
	for range 2 {
		if err := cluster.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		pgtest.Eventually(t, 30*time.Second, "the outage logged", func() bool {
			return strings.Count(logs.String(), "the database does not answer") == strings.Count(logs.String(), "the database answers again")+1
		})
		cluster = pgtest.StartCluster(t, dir)
		pgtest.Eventually(t, 30*time.Second, "the return logged", func() bool {
			return strings.Count(logs.String(), "the database does not answer") == strings.Count(logs.String(), "the database answers again")
		})
	}
	if out := logs.String(); strings.Count(out, "the database does not answer") != 2 {
		t.Errorf("two outages logged %d times, want twice:\n%s", strings.Count(out, "the database does not answer"), out)
	}
}

// A database that refuses new connections, having as many as its
// max_connections allows, is said once in the workers' log, with what to
// do about it, not at every retry of the loops that need a connection;
// once it takes connections again, that is said once too.
func TestCrowdedDatabaseLoggedOnceAndItsEnd(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, _ := outageStore(t)
	const queue = "outage"
	pgtest.LimitConnections(t, cluster.URL(), 20)
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	cluster = pgtest.StartCluster(t, dir)
	// The workers' pool opens its two connections before the server is
	// full, as a process running when it filled up has them: its reads
	// go on, while the notification listener's own connection is refused.
	st, err := store.Open(ctx, cluster.URL()+"&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	a, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	b.Release()

	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := pgtest.NewClient(t, st, queue, func(c *engine.Config) { c.Logger = log })
	c.HandleQueue(queue, func(context.Context, *engine.Job) error { return nil })
	release := pgtest.Crowd(t, cluster.URL())
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the crowded database logged", func() bool {
		return strings.Contains(logs.String(), "the database refuses new connections")
	})
	// Let the listener be refused several times before the server has
	// room again.
	time.Sleep(3 * time.Second)
	release()
	pgtest.Eventually(t, time.Minute, "its end logged", func() bool {
		return strings.Contains(logs.String(), "the database takes new connections again")
	})
	pgtest.Send(t, c, queue, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the message sent after it archived", func() bool { return pgtest.Archived(t, st, queue) == 1 })

	out := logs.String()
	var warns []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warns = append(warns, line)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "the database refuses new connections") {
		t.Errorf("the crowded database took %d warnings, want the one line that says it refuses new connections:\n%s", len(warns), out)
	}
	for _, want := range []string{"max_connections", "pool_max_conns", "PgBouncer"} {
		if len(warns) > 0 && !strings.Contains(warns[0], want) {
			t.Errorf("the warning does not name %s:\n%s", want, warns[0])
		}
	}
	if n := strings.Count(out, "the database takes new connections again"); n != 1 {
		t.Errorf("the end logged %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out, "does not answer") {
		t.Errorf("a crowded database was logged as one that does not answer:\n%s", out)
	}
}

// outageStore starts a cluster of the test's own, opens a migrated store
// on it, and makes the queue "outage" with quick settings.
func outageStore(t *testing.T) (string, *embedpg.Cluster, *store.Store) {
	t.Helper()
	dir, cluster, st := pgtest.PrivateStore(t)
	pgtest.CreateQueue(t, st, "outage")
	pgtest.SetFastSettings(t, st, "outage", nil)
	return dir, cluster, st
}
