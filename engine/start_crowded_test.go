package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
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
	q, role, roleURL, st := operatorWithAJob(t, dbURL)
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
	awaitJobThenStop(t, ran, stop, done, "once connections were let go", logs)
}
