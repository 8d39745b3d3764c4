package engine_test

import (
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A password rotated while a process starts (its store logged in, then
// the role's sessions ended and its password changed before Run's steps
// connect again) is waited out as Run waits it out once running, rather
// than ending the start on the first refused login: once the database
// takes the role again, Run starts and works the queue. A store that
// never logged in still fails at once (TestRunRefusesAStoreThatNeverLoggedIn).
func TestRunWaitsOutALoginRefusedAfterOneWorked(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.PasswordCluster(t)
	q, role, roleURL, st := operatorWithAJob(t, dbURL)
	u, err := url.Parse(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()

	// The rotation begins: the role's password changes, its sessions end.
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" PASSWORD 'rotated-0123456789'")
	pgtest.Exec(t, dbURL, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '"+role+"'")
	st.DropConnections()

	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, st, q, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	ran := signalRuns(c, q)
	stop, done := runInBackground(c)
	defer stop()
	awaitWhileRunning(t, done, "Run to say it waits for the database to take the role again", func() bool {
		return strings.Contains(logs.String(), "starting waits until it takes them")
	})
	// The rotation ends: the store's URL holds the password again.
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" PASSWORD '"+password+"'")
	awaitJobThenStop(t, ran, stop, done, "once the database took the role again", logs)
	if l := logs.String(); !strings.Contains(l, "put the role's current password in the database URL") || !strings.Contains(l, "the database takes the role's connections again") {
		t.Errorf("the log does not say what to do and when the wait ended:\n%s", l)
	}
}

// A store that never logged in, whose login the database refuses, is a
// wrong password or role rather than one rotated: Run fails at once,
// saying so, rather than waiting.
func TestRunRefusesAStoreThatNeverLoggedIn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dbURL := pgtest.PasswordCluster(t)
	owner := pgtest.OpenStore(t, dbURL)
	q := newQueue(t, owner, nil)
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, store.OperatorGrants(role))
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" PASSWORD 'not-the-one-in-the-url'")
	st, err := store.OpenLazy(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	c := pgtest.NewClient(t, st, q, nil)
	err = c.Run(ctx)
	if code, _ := store.SQLState(err); code != "28P01" || !strings.Contains(err.Error(), "check the user and password") {
		t.Fatalf("Run with a password the database refuses from the start: %v; want the refusal (28P01) at once, saying to check the password", err)
	}
}
