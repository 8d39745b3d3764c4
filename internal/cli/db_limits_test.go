package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// On a database whose default is read-only (default_transaction_read_only,
// as on a standby), the read commands work, and the write commands, the
// workers and the MCP write tools say that the database takes no writes
// and to point pgbus at the primary, rather than the server's words alone.
func TestReadOnlyDatabaseSaysPointAtThePrimary(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	deadShop(t, d) // queue shop with dead messages
	dead := d.deadIDs(t)
	pgtest.Exec(t, d.url, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`)

	d.ok(t, "queues")
	d.ok(t, "dlq", "summary")
	d.ok(t, "dlq", "list", "--queue", "shop")
	says := []string{"takes no writes", "default_transaction_read_only", "point pgbus at the primary"}
	for _, args := range [][]string{
		{"dlq", "retry", fmt.Sprint(dead[0]), "--queue", "shop"},
		{"dlq", "retry-all", "--queue", "shop", "--yes"},
		{"send", "shop", `{"n": 1}`},
		{"queue", "pause", "shop"},
		{"work", "--queue", "shop", "--handler", "demo", "--for", "5s"},
	} {
		code := 2 // kind read_only: nothing changed
		if args[0] == "work" {
			code = 1 // the workers cannot start
		}
		stderr := d.fails(t, code, args...)
		for _, w := range says {
			if !strings.Contains(stderr, w) {
				t.Errorf("pgbus %s: stderr does not say %q:\n%s", strings.Join(args, " "), w, stderr)
			}
		}
	}
	c, _, stderr := serveStdio(t, "--database-url", d.url)
	res := callToolRaw(t, c, "pgbus_dlq_retry", map[string]any{"queue": "shop", "ids": []int64{dead[0]}})
	if text := toolText(res); !res.IsError || !strings.Contains(text, "takes no writes") || !strings.Contains(text, "point pgbus at the primary") {
		t.Errorf("pgbus_dlq_retry on a read-only database: error %v, %s; serve's stderr: %s", res.IsError, text, stderr.String())
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_shop_dlq`); n != len(dead) {
		t.Errorf("the DLQ holds %d messages, want the %d it held", n, len(dead))
	}
}
