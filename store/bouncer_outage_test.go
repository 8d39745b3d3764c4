package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestBouncerInFrontOfADownServerIsUnreachable: PgBouncer, once it has
// found its PostgreSQL down, fails the statements sent on the connections
// it took before, and new logins. A read, retried on connections the pool
// checks first, and a ping both say the database cannot be reached
// (IsUnreachable), in words that say PgBouncer cannot reach PostgreSQL,
// never pgx's "likely bug" of a pool that gave up acquiring a connection.
// (A statement that comes before PgBouncer has found out waits for a
// server connection, up to the call timeout.)
func TestBouncerInFrontOfADownServerIsUnreachable(t *testing.T) {
	t.Parallel()
	_, cluster, _ := pgtest.PrivateStore(t)
	b := bouncertest.Start(t, cluster.URL()) // which logs in once, as a bouncer up before the outage did
	ctx := testContext(t)
	s, err := store.Open(ctx, b.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.ListQueues(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	b.AwaitServerDown(t)
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s through PgBouncer in front of a server that is down succeeded", what)
		}
		t.Logf("%s: %v", what, err)
		if !store.IsUnreachable(err) {
			t.Errorf("%s: IsUnreachable = false for %v", what, err)
		}
		if strings.Contains(err.Error(), "likely bug") {
			t.Errorf("%s: the error blames a bug: %v", what, err)
		}
		if !strings.Contains(err.Error(), "PgBouncer") {
			t.Errorf("%s: the error does not say PgBouncer cannot reach PostgreSQL: %v", what, err)
		}
	}
	for i := range 3 {
		_, err := s.ListQueues(ctx)
		check("list queues #"+string(rune('1'+i)), err)
	}
	check("ping", s.Ping(ctx))
}

// TestPingOfAPausedBouncer: PgBouncer takes the connection, but holds its
// statements while its database is paused. A ping is bounded by the call
// bound of its context (WithStatementTimeout), and says the server, or a
// pooler in front of it, took the connection and did not answer; it is
// unreachable, so that waiting for it is right. Without a bound, the
// bouncer's query_wait_timeout ends it, and the advice speaks of
// PgBouncer's lack of a server connection, not of the database URL. A
// regression waits until the test's own context ends.
func TestPingOfAPausedBouncer(t *testing.T) {
	t.Parallel()
	b := bouncertest.StartWith(t, pgtest.NewDatabase(t), bouncertest.Options{QueryWaitTimeout: time.Second})
	b.Pause(t)
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()

	_, err := store.Open(store.WithStatementTimeout(ctx, 300*time.Millisecond), b.URL())
	if ctx.Err() != nil {
		t.Fatalf("open of a paused bouncer under a call bound waited until the test's deadline: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "accepted the connection but did not answer within 300ms") {
		t.Errorf("open of a paused bouncer under a 300ms bound = %v, want it to say the connection was accepted and not answered within 300ms", err)
	}
	if !store.IsUnreachable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("IsUnreachable = %v, deadline exceeded = %v, for %v; want both", store.IsUnreachable(err), errors.Is(err, context.DeadlineExceeded), err)
	}

	_, err = store.Open(ctx, b.URL())
	if ctx.Err() != nil {
		t.Fatalf("open of a paused bouncer waited until the test's deadline: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "query_wait_timeout") {
		t.Fatalf("open of a paused bouncer whose query_wait_timeout is 1s = %v, want its query_wait_timeout", err)
	}
	if strings.Contains(err.Error(), "check the database URL") || !strings.Contains(err.Error(), "no server connection") {
		t.Errorf("the advice on PgBouncer's query_wait_timeout does not say it had no server connection to give: %v", err)
	}
	if !store.IsUnreachable(err) {
		t.Errorf("IsUnreachable = false for %v", err)
	}
}

// TestStatementsCutByABouncerRestartAreUnreachable: PgBouncer killed and
// started again (a crash, a supervisor's restart) breaks the connections
// through it. pgx says so as "conn closed", for a statement under way and
// for the statements of a transaction begun before, and that is the
// database out of reach (IsUnreachable), as its other errors of a broken
// connection are: a bulk move cut off by it stops and says how far it
// went, rather than counting every message left as failed.
func TestStatementsCutByABouncerRestartAreUnreachable(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	b := bouncertest.Start(t, dbURL)
	ctx := testContext(t)
	s, err := store.Open(ctx, b.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	running := make(chan error, 1)
	go func() {
		_, err := s.Pool().Exec(ctx, `SELECT pg_sleep(60)`)
		running <- err
	}()
	direct := connect(t, dbURL, "")
	pgtest.Eventually(t, time.Minute, "the statement to run on the server", func() bool {
		var n int
		err := direct.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'`).Scan(&n)
		return err == nil && n == 1
	})
	b.Restart(t)
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s through a restarted PgBouncer succeeded", what)
		}
		if !store.IsUnreachable(err) {
			t.Errorf("%s through a restarted PgBouncer: IsUnreachable = false for %v", what, err)
		}
	}
	check("a statement under way", <-running)
	_, err = tx.Exec(ctx, `SELECT 2`)
	check("a statement of a transaction begun before", err)
	check("the commit of a transaction begun before", tx.Commit(ctx))
}
