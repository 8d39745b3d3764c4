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

// Workers that start through PgBouncer while the PostgreSQL behind it
// restarts (PgBouncer takes the login, and fails the statements) wait for
// it rather than ending their run, and work the jobs sent once it is back.
func TestRunStartsThroughBouncerOnceServerIsBack(t *testing.T) {
	t.Parallel()
	dir, cluster, direct := pgtest.PrivateStore(t)
	const queue = "outage"
	pgtest.CreateQueue(t, direct, queue)
	pgtest.SetFastSettings(t, direct, queue, nil)
	b := bouncertest.Start(t, cluster.URL())
	ctx := pgtest.Context(t)
	st, err := store.Open(ctx, b.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.ListQueues(ctx); err != nil { // the bouncer logs in once, as one up before the outage did
		t.Fatal(err)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, st, queue, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	ran, done, stop := pgtest.RunReporting(c, queue)
	defer stop()
	pgtest.Eventually(t, 2*time.Minute, "Run to say it waits for the database", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run returned while PostgreSQL behind PgBouncer was down: %v\n%s", err, logs.String())
		default:
		}
		return strings.Contains(logs.String(), "starting waits until it answers")
	})
	pgtest.StartCluster(t, dir)
	id, err := direct.Send(ctx, queue, store.NewMessage{Payload: json.RawMessage(`{"n": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.AwaitJob(ctx, t, ran, done, id, &logs)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
