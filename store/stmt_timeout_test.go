package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Under WithStatementTimeout a call whose connections stopped answering
// without being closed fails, statement by statement, instead of waiting
// on them for good, and drops them: calls made again soon take new
// connections and succeed. The retention pass holds a transaction across
// many statements, and so tests the statements of transactions too.
func TestStatementTimeoutGivesUpOnFrozenConnections(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	proxy := pgtest.NewFreezingProxy(t, pgtest.NewDatabase(t)) // a database of its own: retention reads every queue
	s := pgtest.OpenStore(t, proxy.URL())
	pgtest.CreateQueue(t, s, pgtest.Name("frozen"))
	if _, err := s.RunRetention(ctx, 100, time.Hour); err != nil {
		t.Fatal(err)
	}
	proxy.Freeze()

	done := make(chan error, 1)
	go func() {
		bounded := store.WithStatementTimeout(ctx, time.Second)
		for {
			rep, err := s.RunRetention(bounded, 100, time.Hour)
			if err == nil && rep.Ran || ctx.Err() != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("retention never passed through new connections: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("retention waited a minute on connections that stopped answering")
	}
}
