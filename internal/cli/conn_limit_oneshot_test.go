package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A one-shot command, which holds a connection or two, says nothing of a
// role's CONNECTION LIMIT below its pool's size: its pool is fitted below
// the limit without a word, and the command does its work.
func TestOneShotCommandsSayNothingOfTheConnectionLimit(t *testing.T) {
	t.Parallel()
	owner := newDB(t)
	owner.ok(t, "queue", "create", "orders")
	role, roleURL := pgtest.NewRole(t, owner.url)
	pgtest.Exec(t, owner.url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, owner.url, "GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, owner.url, "ALTER ROLE "+role+" CONNECTION LIMIT 3")
	env := []string{"DATABASE_URL=" + pgtest.WithParam(t, roleURL, "pool_max_conns", "6")}
	for _, args := range [][]string{{"queues"}, {"dlq", "list"}} {
		r := pgbus(t, env, args...)
		if r.code != 0 || strings.Contains(r.stderr, "CONNECTION LIMIT") {
			t.Errorf("pgbus %s: exit %d; want 0 and no word of the role's CONNECTION LIMIT\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}
