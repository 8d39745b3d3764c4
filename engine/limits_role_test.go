package engine_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// The ALTER ROLE the workers' logs advise for lock_timeout changes the
// role pgbus connects as when run as printed, whatever its name: "Svc"
// bare would be svc, and a quote in a name broke the statement.
func TestLimitAdviceRunsAsPrintedForAnyRoleName(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	timedOut := &pgconn.PgError{Severity: "ERROR", Code: "55P03", Message: "canceling statement due to lock timeout"}
	for _, role := range []string{"Svc", `We"ird Rôle ü`} {
		ident := pgx.Identifier{role}.Sanitize()
		pgtest.Exec(t, dbURL, "CREATE ROLE "+ident)
		t.Cleanup(func() { pgtest.Exec(t, dbURL, "DROP ROLE "+ident) })
		advice := engine.LimitAdvice(timedOut, role)
		alter := regexp.MustCompile(`ALTER ROLE .* SET lock_timeout = '10s'`).FindString(advice)
		if alter == "" {
			t.Fatalf("role %q: the advice %q gives no ALTER ROLE", role, advice)
		}
		pgtest.Exec(t, dbURL, alter)
		conn, err := pgx.Connect(testContext(t), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		var set bool
		err = conn.QueryRow(testContext(t), `SELECT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole
			WHERE r.rolname = $1 AND 'lock_timeout=10s' = ANY (s.setconfig))`, role).Scan(&set)
		conn.Close(context.Background())
		if err != nil || !set {
			t.Errorf("role %q: after %s, as advised, its lock_timeout is not 10s (%v)", role, alter, err)
		}
	}
}
