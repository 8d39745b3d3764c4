package engine_test

import (
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A server that refuses the role's logins (a password changed, or a role
// dropped or no longer let in, SQLSTATE class 28) under running workers is
// one outage for the log, saying what to do, where each loop logged the
// raw error about once a second. The refusal is the server's own.
func TestRefusedLoginIsOneOutage(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("pgbus_no_such_role")
	conn, refusal := pgx.Connect(pgtest.Context(t), u.String())
	if refusal == nil {
		conn.Close(pgtest.Context(t))
	}
	if code, _ := store.SQLState(refusal); !strings.HasPrefix(code, "28") {
		t.Fatalf("connecting as a role that does not exist: %v; want a refusal of class 28", refusal)
	}
	var logs lockedBuffer
	o := engine.NewOutage(slog.New(slog.NewTextHandler(&logs, nil)))
	for range 20 {
		if !o.Failed(refusal) {
			t.Fatal("a refused login was not taken for an outage")
		}
	}
	if got := logs.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "refuses this role's new connections") || !strings.Contains(got, "put the role's current password in the database URL") {
		t.Fatalf("twenty refused logins: want one warning saying so and what to do:\n%s", got)
	}
	if !o.AnsweredAfterQuiet() || !strings.Contains(logs.String(), "the database takes new connections again") {
		t.Fatalf("no end of the outage after a quiet without a refused login:\n%s", logs.String())
	}
}

// Sessions ended by an administrator (pg_terminate_backend, SQLSTATE
// 57P01, as a shutdown's are) are an outage whose words name that too:
// it read as a database down only, while it answered at once.
func TestTerminatedSessionsOutageNamesTheAdministrator(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	other, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	// Ended in the middle of a statement, the session reads the server's
	// last word (57P01); ended idle, its next statement may fail writing
	// to the closed socket before it reads it.
	result := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, `SELECT pg_sleep(60)`)
		result <- err
	}()
	pid := conn.PgConn().PID()
	pgtest.Eventually(t, time.Minute, "the session sleeping", func() bool {
		var sleeping bool
		err := other.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep')`, pid).Scan(&sleeping)
		return err == nil && sleeping
	})
	if _, err := other.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	ended := <-result
	if code, _ := store.SQLState(ended); code != "57P01" {
		t.Fatalf("the ended session's error: %v; want SQLSTATE 57P01", ended)
	}
	var logs lockedBuffer
	o := engine.NewOutage(slog.New(slog.NewTextHandler(&logs, nil)))
	if !o.Failed(ended) {
		t.Fatalf("a session ended by pg_terminate_backend (%v) was not taken for an outage", ended)
	}
	if got := logs.String(); !strings.Contains(got, "an administrator ended its sessions with pg_terminate_backend") {
		t.Fatalf("the outage of terminated sessions: want it to name the administrator:\n%s", got)
	}
}
