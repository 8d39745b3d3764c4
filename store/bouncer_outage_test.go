package store_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestBouncerInFrontOfADownServerIsUnreachable: PgBouncer takes the login
// of a database whose PostgreSQL is down, and fails the statements sent on
// it. A read, retried on connections the pool checks first, and a ping
// both say the database cannot be reached (IsUnreachable), in words that
// say PgBouncer cannot reach PostgreSQL, never pgx's "likely bug" of a
// pool that gave up acquiring a connection.
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
