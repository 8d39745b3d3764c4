package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus migrate cut off by the statement_timeout of the role it migrates
// as says to reset that setting for the role, or to migrate as a role
// without it, and gives the migration again as its next step, rather than
// the advice for a call that moves messages.
func TestMigrateCutByTheRolesStatementTimeout(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	role, roleURL := pgtest.NewRole(t, d.url)
	pgtest.Exec(t, d.url, "ALTER ROLE "+role+" SUPERUSER")
	pgtest.Exec(t, d.url, "ALTER ROLE "+role+" SET statement_timeout = '200ms'")
	ctx := pgtest.Context(t)
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The migration waits for its lock, held here, until the role's
	// statement_timeout cuts the wait.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgtest.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"migrate"}, {"migrate", "--json"}} {
		r := pgbus(t, []string{"DATABASE_URL=" + roleURL}, args...)
		cmd := strings.Join(args, " ")
		if r.code == 0 {
			t.Fatalf("pgbus %s while the migration lock is held: exit 0; want the statement_timeout to cut it\n%s", cmd, r.stdout)
		}
		stderr := strings.ReplaceAll(r.stderr, `\"`, `"`) // --json's line quotes the role's name
		for _, want := range []string{"statement_timeout", `ALTER ROLE "` + role + `" RESET statement_timeout`, "run the migration as a role without it", "pgbus migrate"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("pgbus %s cut by the role's statement_timeout: stderr lacks %q:\n%s", cmd, want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "fewer messages") {
			t.Errorf("pgbus %s cut by the role's statement_timeout: advice for a call that moves messages:\n%s", cmd, r.stderr)
		}
	}
	r := pgbus(t, []string{"DATABASE_URL=" + roleURL}, "migrate", "--json")
	if !strings.Contains(r.stderr, `"next":[{"command":"pgbus migrate"`) {
		t.Errorf("pgbus migrate --json cut by the role's statement_timeout: stderr %s; want the migration again in next", r.stderr)
	}
}
