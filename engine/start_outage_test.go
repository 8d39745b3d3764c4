//go:build linux || darwin

package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A database that does not answer while Run starts (PostgreSQL or its
// pooler restarting just then) is waited for, as the running loops wait
// one out, rather than ending Run: it is said once, tried again every few
// seconds, and once the database is back Run registers and works the jobs
// sent then.
func TestRunWaitsForTheDatabaseAtStart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, st := outageStore(t)
	const queue = "outage"
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := pgtest.NewClient(t, st, queue, func(c *engine.Config) { c.Logger = log })
	ran := make(chan int64, 1)
	c.HandleQueue(queue, func(_ context.Context, job *engine.Job) error {
		select {
		case ran <- job.ID:
		default:
		}
		return nil
	})
	stop, done := runInBackground(c)
	defer stop()
	pgtest.Eventually(t, time.Minute, "Run to try its start again", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run returned while the database was restarting: %v\n%s", err, logs.String())
		default:
		}
		return strings.Count(logs.String(), "starting tries again") >= 2
	})
	pgtest.StartCluster(t, dir)
	pgtest.Eventually(t, time.Minute, "the worker registered once the database is back", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v\n%s", err, logs.String())
		default:
		}
		return pgtest.Int(t, st, `SELECT count(*) FROM pgbus.workers WHERE id = $1`, c.ID()) == 1
	})
	id := pgtest.Send(t, c, queue, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.AwaitJob(ctx, t, ran, done, id, &logs)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := logs.String()
	var warns []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warns = append(warns, line)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "the database does not answer") || !strings.Contains(warns[0], "starting waits until it answers") {
		t.Errorf("the outage at start took %d warnings, want one saying starting waits for the database:\n%s", len(warns), out)
	}
	if !strings.Contains(out, "the database answers again; starting goes on") {
		t.Errorf("the end of the wait is not logged:\n%s", out)
	}
}

// A stop while Run waits at start for a database that does not answer
// ends the wait at once, as a stop like any other: Run returns nil.
func TestStopEndsTheWaitForTheDatabaseAtStart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	_, cluster, st := outageStore(t)
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, st, "outage", func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	c.HandleQueue("outage", func(context.Context, *engine.Job) error { return nil })
	stop, done := runInBackground(c)
	defer stop()
	pgtest.Eventually(t, time.Minute, "Run to say it waits for the database", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run returned while the database was down: %v\n%s", err, logs.String())
		default:
		}
		return strings.Contains(logs.String(), "starting waits until it answers")
	})
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run stopped while waiting for the database: %v; want nil, a stop like any other", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return once stopped while waiting for the database")
	}
}
