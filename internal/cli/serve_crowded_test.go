package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus serve started while the server has no free connection slots for
// it (SQLSTATE 53300: max_connections reached, or the role's CONNECTION
// LIMIT) says so at start, and in the calls it refuses meanwhile, with
// what to do: not that the database does not answer, which sends a
// person to check a server that answers well.
func TestServeStartedWhileTheServerHasNoFreeSlots(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" CONNECTION LIMIT 0")
	c, _, stderr := serveStdio(t, "--no-workers", "--database-url", roleURL)

	res := callToolRaw(t, c, "pgbus_queue_stats", map[string]any{"queue": "orders"})
	text := toolText(res)
	if kind := errorMetaKind(t, res); kind != "unavailable" || strings.Contains(text, "does not answer") ||
		!strings.Contains(text, "no free connection slots") || !strings.Contains(text, "53300") || !strings.Contains(text, "pool_max_conns") {
		t.Errorf("pgbus_queue_stats while the server has no free slots: kind %q, %q; want kind unavailable, saying it has no free connection slots (53300) and what to do", kind, text)
	}
	pgtest.Eventually(t, time.Minute, "the start's warning", func() bool { return strings.Contains(stderr.String(), "pgbus serve: ") })
	var start string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "pgbus serve: ") {
			start = line
			break
		}
	}
	if strings.Contains(start, "does not answer") || !strings.Contains(start, "no free connection slots") ||
		!strings.Contains(start, "too_many_connections") || !strings.Contains(start, "max_connections") || !strings.Contains(start, "pool_max_conns in --database-url") {
		t.Errorf("the start's warning while the server has no free slots does not say so, nor what to do:\n%s", start)
	}
}
