package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Run started while the server has as many connections as it allows
// for the role (its CONNECTION LIMIT reached by other clients, as in a
// deploy where the old processes still hold theirs) waits for one, as
// the first connection does, rather than failing its start-up steps at
// once; once connections are let go it starts and works the queue.
func TestRunWaitsForAConnectionAtStart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dbURL := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, dbURL)
	q := newQueue(t, owner, nil)
	if _, err := owner.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, store.OperatorGrants(role))
	st, err := store.Open(ctx, roleURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	st.DropConnections() // its start-up steps need new ones

	// Other clients of the role take every connection it may have.
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" CONNECTION LIMIT 3")
	var held []*pgx.Conn
	release := func() {
		for _, c := range held {
			_ = c.Close(context.Background())
		}
		held = nil
	}
	t.Cleanup(release)
	for {
		c, err := pgx.Connect(ctx, roleURL)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "53300" {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}

	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, st, q, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	ran := signalRuns(c, q)
	stop, done := runInBackground(c)
	defer stop()
	awaitWhileRunning(t, done, "Run to say it waits for a connection", func() bool {
		return strings.Contains(logs.String(), "starting waits until other clients let theirs go")
	})
	release()
	select {
	case <-ran:
	case err := <-done:
		t.Fatalf("Run returned before working the job: %v", err)
	case <-ctx.Done():
		t.Fatalf("the job did not run once connections were let go:\n%s", logs.String())
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
