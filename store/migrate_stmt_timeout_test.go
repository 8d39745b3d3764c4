package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A migration cut off by the statement_timeout of the role that migrates
// says which setting cut it, how to reset it for that role or to migrate
// as a role without it, and gives the migration as its next step, rather
// than the advice for a call that moves messages (a limit).
func TestMigrationCutByTheRolesStatementTimeout(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "ALTER ROLE "+role+" SUPERUSER")
	pgtest.Exec(t, url, "ALTER ROLE "+role+" SET statement_timeout = '200ms'")
	// The migration waits for its lock, held here, until the role's
	// statement_timeout cuts the wait.
	holdInTx(t, url, "other migrator", `SELECT pg_advisory_xact_lock($1)`, store.MigrationLockKey)
	s, err := store.Open(testContext(t), roleURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	_, err = s.Migrate(testContext(t))
	if lim := store.LimitOf(err); lim != store.LimitStatementTimeout {
		t.Fatalf("a migration under a statement_timeout of 200ms, its lock held: %v (limit %v); want it cut by the statement_timeout", err, lim)
	}
	got := ops.ExplainMigration(err, s.User())
	if !errors.Is(got, err) {
		t.Errorf("the explained error does not wrap the migration's: %v", got)
	}
	msg := got.Error()
	for _, want := range []string{"statement_timeout", "ALTER ROLE " + store.RoleSQL(role) + " RESET statement_timeout",
		"ALTER ROLE " + store.RoleSQL(role) + " SET statement_timeout = '5min'", "as a role without it", "migrat"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the migration's error lacks %q:\n%s", want, msg)
		}
	}
	for _, wrong := range []string{"fewer messages", "a limit", "or SET statement_timeout"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the migration's error says %q, advice for a call that moves messages:\n%s", wrong, msg)
		}
	}
	if next := ops.NextSteps(got); len(next) != 1 || next[0].Op != ops.OpMigrate {
		t.Errorf("the migration's next steps = %+v; want the migration again (%s)", next, ops.OpMigrate)
	}
}
