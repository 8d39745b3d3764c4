package bouncertest_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestWorkerOutageThroughPausedBouncer: workers whose calls a paused
// PgBouncer holds unanswered say in their outage warning that a pooler in
// front of the database may be paused or have no server connection to
// give, and what to check on it, as a send and the health check do.
func TestWorkerOutageThroughPausedBouncer(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	direct := pgtest.Store(t)
	b := bouncertest.Start(t, pgtest.URL(t))
	q := pgtest.NewFastQueue(t, direct, "paused", nil)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, openStore(t, b.URL()), q, func(c *engine.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.DatabaseCallTimeout = 2 * time.Second
		c.NoListen = true
	})
	ran, done, stop := pgtest.RunReporting(c, q)
	defer stop()
	id, err := direct.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.AwaitJob(ctx, t, ran, done, id, &logs)
	b.Pause(t)
	var warning string
	pgtest.Eventually(t, time.Minute, "the workers to warn that the database does not answer", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "does not answer") {
				warning = line
				return true
			}
		}
		return false
	})
	for _, want := range []string{"pooler", "paused", "RESUME", "SHOW POOLS"} {
		if !strings.Contains(warning, want) {
			t.Errorf("the outage warning through a paused PgBouncer does not say %q:\n%s", want, warning)
		}
	}
	b.Resume(t)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestWorkerOutageThroughKilledSessionBouncer: workers whose connections
// through PgBouncer in session mode break as it is killed (their listener
// first, which holds its connection open) say that the connection was cut,
// by what, and what they do meanwhile, not a bare "unexpected EOF"; and
// once it is back, that the database answers again.
func TestWorkerOutageThroughKilledSessionBouncer(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	direct := pgtest.Store(t)
	b := bouncertest.StartWith(t, pgtest.URL(t), bouncertest.Options{PoolMode: "session"})
	q := pgtest.NewFastQueue(t, direct, "killed", nil)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, openStore(t, b.URL()), q, func(c *engine.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		// Quiet between jobs but for the listener, which waits on its
		// connection and so meets the kill first.
		c.PollInterval, c.SettingsRefresh, c.StatsFlush, c.ProcessHeartbeat = time.Hour, time.Hour, time.Hour, time.Hour
	})
	ran, done, stop := pgtest.RunReporting(c, q)
	defer stop()
	// The first job may be read by the workers' first read; the second,
	// sent once the first is done, only by a notification, or by the
	// read the listener makes once it listens: either way the listener
	// waits for notifications then.
	for n := range 2 {
		id, err := direct.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n": 1}`)})
		if err != nil {
			t.Fatal(err)
		}
		pgtest.AwaitJob(ctx, t, ran, done, id, &logs)
		pgtest.Eventually(t, time.Minute, "the job's outcome to be written", func() bool {
			return pgtest.Int(t, direct, `SELECT count(*) FROM pgmq."a_`+q+`"`) == n+1
		})
	}
	b.Kill(t)
	var warning string
	pgtest.Eventually(t, time.Minute, "the workers to warn of the outage", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=WARN") {
				warning = line
				return true
			}
		}
		return false
	})
	for _, want := range []string{"the database does not answer: the connection to it was cut", "PgBouncer", "restarted or killed", "reconnect"} {
		if !strings.Contains(warning, want) {
			t.Errorf("the first warning as PgBouncer in session mode is killed does not say %q:\n%s", want, warning)
		}
	}
	b.StartAgain(t)
	pgtest.Eventually(t, time.Minute, "the workers to say the database answers again", func() bool {
		return strings.Contains(logs.String(), "answers again")
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
