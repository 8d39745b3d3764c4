package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A migration that gave up waiting for a lock another session held is
// told as what it is: it waited for that session, which is to be ended,
// and then migrate is to run again, its next step. The lock_timeout it
// waited by is the migration's own, which no setting of the role or
// database changes: the advice for a lock_timeout a DBA sets (raise it
// with ALTER ROLE ... SET lock_timeout) was wrapped around its error, as
// the command line explains the errors of its start (ops.ExplainLimit),
// and the error had no next step. The same for a migration that waited
// its turn while another process held the migration lock.
func TestMigrationGivenUpOnALockSaysToEndTheHolderAndMigrateAgain(t *testing.T) {
	for _, c := range []struct {
		name, hold string
		args       []any
	}{
		{"table", `SELECT count(*) FROM pgbus.workers`, nil},
		{"migration lock", `SELECT pg_advisory_xact_lock($1)`, []any{store.MigrationLockKey}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store.SetMigrationLockWaits(t, 300*time.Millisecond, 50*time.Millisecond, 1500*time.Millisecond, 2*time.Second)
			url, _, _ := workersMigrationPending(t)
			s, err := store.Open(testContext(t), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			_, pid := holdInTx(t, url, "report", c.hold, c.args...)

			ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
			defer cancel()
			_, err = s.Migrate(ctx)
			if err == nil {
				t.Fatal("migrate succeeded while another session held the lock it needs")
			}
			if ctx.Err() != nil {
				t.Fatalf("migrate waited until its context ended instead of giving up: %v", err)
			}
			if lim := store.LimitOf(err); lim != store.NoLimit {
				t.Errorf("LimitOf(%v) = %v; want NoLimit: the migration's lock_timeout is its own, not a limit the role or database sets", err, lim)
			}

			got := ops.ExplainLimit(err, s.User())
			var e *ops.Error
			if !errors.As(got, &e) {
				t.Fatalf("ExplainLimit of the migration's error = %T %v; want an *ops.Error carrying its next step", got, got)
			}
			if !errors.Is(got, err) {
				t.Errorf("the explained error does not wrap the migration's: %v", got)
			}
			msg := e.Error()
			for _, want := range []string{fmt.Sprintf("pg_terminate_backend(%d)", pid), "migrate again", "nothing of it was applied"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error lacks %q:\n%s", want, msg)
				}
			}
			for _, wrong := range []string{"set for the role or database", "ALTER ROLE", "raise lock_timeout"} {
				if strings.Contains(msg, wrong) {
					t.Errorf("the error says %q, about a setting of the role that has no part in it:\n%s", wrong, msg)
				}
			}
			var migrate bool
			for _, h := range e.Hints {
				migrate = migrate || h.Op == ops.OpMigrate
			}
			if !migrate {
				t.Errorf("the error's next steps = %+v; want the migration again (%s)", e.Hints, ops.OpMigrate)
			}
		})
	}
}

// The tests of other packages hold the migration lock by pgtest's key:
// they would hold another lock, and wait for nothing, if it were not the
// store's.
func TestPgtestMigrationLockKeyIsTheStores(t *testing.T) {
	if pgtest.MigrationLockKey != store.MigrationLockKey {
		t.Fatalf("pgtest.MigrationLockKey = %#x; the store's migrations take %#x", pgtest.MigrationLockKey, store.MigrationLockKey)
	}
}
