package dbopen_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A role whose CONNECTION LIMIT is below what a process opens (its pool
// and the connection listening beside it) is told once, at the start,
// naming the limit, the pool's size and what to do; and the process's
// pool is fitted below the limit, so that its calls, however many at
// once, wait for a connection of its own rather than meet the server's
// refusal, which the workers would warn of every minute while all is
// well.
func TestConnectFitsThePoolToTheRolesConnectionLimit(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dbURL := pgtest.NewDatabase(t)
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" CONNECTION LIMIT 3")
	var logs pgtest.SyncBuffer
	db, err := dbopen.Connect(ctx, dbopen.Options{URL: pgtest.WithParam(t, roleURL, "pool_max_conns", "6"), URLWords: "--database-url",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// More calls at once than the limit allows connections.
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.Pool().Exec(ctx, "SELECT pg_sleep(0.2)")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call of a process whose pool would pass its role's CONNECTION LIMIT: %v", err)
			break
		}
	}
	if got := db.PoolSize(); got != 2 {
		t.Errorf("the pool holds up to %d connections; want 2, one below the role's limit of 3", got)
	}
	out := logs.String()
	if n := strings.Count(out, "CONNECTION LIMIT"); n < 1 {
		t.Fatalf("no warning names the role's CONNECTION LIMIT:\n%s", out)
	}
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Errorf("%d warnings; want one:\n%s", n, out)
	}
	for _, want := range []string{"the role " + role + " allows 3 connections", "pool holds up to 6", "ALTER ROLE", "CONNECTION LIMIT 8)", "pool_max_conns in --database-url", "connection_limit=3", "pool_max_conns=6"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning does not say %q:\n%s", want, out)
		}
	}
}

// A role whose limit leaves room for the pool and its listener is not
// warned of, nor is its pool changed.
func TestConnectLeavesAPoolWithinTheLimit(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dbURL := pgtest.NewDatabase(t)
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" CONNECTION LIMIT 5")
	var logs pgtest.SyncBuffer
	db, err := dbopen.Connect(ctx, dbopen.Options{URL: pgtest.WithParam(t, roleURL, "pool_max_conns", "4"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.PoolSize(); got != 4 {
		t.Errorf("the pool holds up to %d connections; want the 4 its URL asks for", got)
	}
	if strings.Contains(logs.String(), "CONNECTION LIMIT") {
		t.Errorf("a pool within the role's limit was warned of:\n%s", logs.String())
	}
}
