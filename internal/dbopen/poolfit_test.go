package dbopen_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
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
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), PoolInUse: true})
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

// connectUnderRoleLimit connects as a new role whose CONNECTION LIMIT is
// limit, with a pool of poolMax, as a one-shot command does, and returns
// the pool's size and what was logged.
func connectUnderRoleLimit(t *testing.T, limit, poolMax int) (int, string) {
	t.Helper()
	dbURL := pgtest.NewDatabase(t)
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, fmt.Sprintf("ALTER ROLE %s CONNECTION LIMIT %d", role, limit))
	var logs pgtest.SyncBuffer
	db, err := dbopen.Connect(pgtest.Context(t), dbopen.Options{URL: pgtest.WithParam(t, roleURL, "pool_max_conns", fmt.Sprint(poolMax)),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.PoolSize(), logs.String()
}

// A role whose limit leaves room for the pool and its listener is not
// warned of, nor is its pool changed.
func TestConnectLeavesAPoolWithinTheLimit(t *testing.T) {
	t.Parallel()
	size, logs := connectUnderRoleLimit(t, 5, 4)
	if size != 4 {
		t.Errorf("the pool holds up to %d connections; want the 4 its URL asks for", size)
	}
	if strings.Contains(logs, "CONNECTION LIMIT") {
		t.Errorf("a pool within the role's limit was warned of:\n%s", logs)
	}
}

// A one-shot command, which holds a connection or two, has its pool
// fitted below its role's limit all the same, but is not warned: the
// limit is no matter for it.
func TestConnectFitsAOneShotPoolWithoutAWarning(t *testing.T) {
	t.Parallel()
	size, logs := connectUnderRoleLimit(t, 3, 6)
	if size != 2 {
		t.Errorf("the pool holds up to %d connections; want 2, one below the role's limit of 3", size)
	}
	if strings.Contains(logs, "CONNECTION LIMIT") {
		t.Errorf("a one-shot command was warned of its pool:\n%s", logs)
	}
}

// A database's CONNECTION LIMIT (ALTER DATABASE) below what a process
// opens is told and fitted as a role's is, naming the database and the
// statement that raises its limit.
func TestConnectFitsThePoolToTheDatabasesConnectionLimit(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	_, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, `ALTER DATABASE "`+name+`" CONNECTION LIMIT 3`)
	var logs pgtest.SyncBuffer
	db, err := dbopen.Connect(ctx, dbopen.Options{URL: pgtest.WithParam(t, roleURL, "pool_max_conns", "6"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), PoolInUse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.PoolSize(); got != 2 {
		t.Errorf("the pool holds up to %d connections; want 2, one below the database's limit of 3", got)
	}
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Errorf("%d warnings; want one:\n%s", n, out)
	}
	for _, want := range []string{"the database " + name + " allows 3 connections", "pool holds up to 6", `ALTER DATABASE \"` + name + `\" CONNECTION LIMIT 8`, "database=" + name, "connection_limit=3"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning does not say %q:\n%s", want, out)
		}
	}
}

// A server started before its database answered (Dial, then
// ReadyWhenReachable) compares its pool with the limits as soon as the
// database first answers, before its schema is ready, and, its pool in use
// already, says that a restart fits it and what pool_max_conns to set.
func TestReadyWhenReachableTellsThePoolsFitOnceTheDatabaseAnswers(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t) // no pgbus schema: it cannot be readied without a migration
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" CONNECTION LIMIT 3")
	var logs pgtest.SyncBuffer
	db, err := dbopen.Dial(pgtest.Context(t), dbopen.Options{URL: pgtest.WithParam(t, roleURL, "pool_max_conns", "6"), URLWords: "--database-url",
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), PoolInUse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	defer cancel()
	failed := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- db.ReadyWhenReachable(ctx, false, func(why error) {
			if why != nil {
				once.Do(func() { close(failed) })
			}
		})
	}()
	select {
	case <-failed:
	case err := <-done:
		t.Fatalf("ReadyWhenReachable on a database without the schema = %v; want it to wait", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("ReadyWhenReachable = %v; want it cancelled", err)
	}
	out := logs.String()
	for _, want := range []string{"the role " + role + " allows 3 connections", "began before the database answered", "Restarting it while the database answers fits its pool to 2", "?pool_max_conns=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning does not say %q:\n%s", want, out)
		}
	}
	if got := db.PoolSize(); got != 6 {
		t.Errorf("the pool in use holds up to %d connections; want the 6 it had", got)
	}
}
