package cli_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dashboard whose database answers but whose schema it may not use
// (none yet, for a --read-only dashboard or a role that may not create
// it; one older than this pgbus, for a --read-only dashboard) serves its
// pages rather than exit, as pgbus serve does: they answer 503 saying why,
// with pgbus migrate as the command to run, the log says so, and once
// someone migrates, the dashboard finds the schema ready by itself and
// shows the overview. It exited at once, serving nothing.
func TestDashboardServesWhileTheSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	for _, c := range schemaNotReadyCases(nil) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			owner := newDB(t)
			url, says, reader := c.setup(t, owner)
			get, logs := startDashboard(t, append(c.args, "--database-url", url)...)

			for _, path := range []string{"/", "/dlq"} {
				code, page, _ := get(path, "")
				if code != http.StatusServiceUnavailable || !strings.Contains(page, says) || !strings.Contains(page, "pgbus migrate") {
					t.Errorf("GET %s while the schema is not ready: %d\n%s\nwant 503 saying %q, with pgbus migrate to run\nlog:\n%s", path, code, page, says, logs.String())
				}
			}
			if log := logs.String(); !strings.Contains(log, "serving the pages meanwhile") || !strings.Contains(log, says) || !strings.Contains(log, "see pgbus migrate") {
				t.Errorf("the dashboard's log while the schema is not ready does not say why, the command to run, and that it serves meanwhile:\n%s", log)
			}

			migrateFor(t, owner, reader)
			var code int
			var page string
			pgtest.Eventually(t, 2*time.Minute, "the overview to answer on the migrated schema", func() bool {
				code, page, _ = get("/", "")
				return code == http.StatusOK
			})
			if !strings.Contains(page, "<h1>Overview</h1>") {
				t.Errorf("GET / once the schema is migrated: %d, want the overview:\n%s", code, page)
			}
		})
	}
}

// schemaNotReadyCase is a database whose schema a process may not use,
// and the flags the process is given besides --database-url.
type schemaNotReadyCase struct {
	name string
	// setup readies owner's database, and returns the URL the process is
	// given, the words its answers must say, and the role to let read the
	// schema once it is migrated ("" for owner's).
	setup func(t *testing.T, owner db) (url, says, reader string)
	args  []string
}

// schemaNotReadyCases are a database without the schema, for a read-only
// process and for a role that may not create it (given roleArgs), and a
// schema older than this pgbus, for a read-only process.
func schemaNotReadyCases(roleArgs []string) []schemaNotReadyCase {
	return []schemaNotReadyCase{
		{"read-only on a database without the schema", func(t *testing.T, owner db) (string, string, string) {
			return owner.url, "the database has no pgbus schema", ""
		}, []string{"--read-only"}},
		{"read-only on a schema older than this pgbus", func(t *testing.T, owner db) (string, string, string) {
			owner.ok(t, "migrate")
			pgtest.Exec(t, owner.url, oldSchema(t))
			return owner.url, fmt.Sprintf("this pgbus needs %d", migrationCount(t)), ""
		}, []string{"--read-only"}},
		{"a role that may not migrate, on a database without the schema", func(t *testing.T, owner db) (string, string, string) {
			role, roleURL := pgtest.NewRole(t, owner.url)
			return roleURL, "which the role " + role + " may not do", role
		}, roleArgs},
	}
}

// migrateFor migrates owner's database and lets reader, when not "",
// read it.
func migrateFor(t *testing.T, owner db, reader string) {
	t.Helper()
	owner.ok(t, "migrate")
	if reader != "" {
		pgtest.Exec(t, owner.url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+reader)
		pgtest.Exec(t, owner.url, "GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+reader)
	}
}
