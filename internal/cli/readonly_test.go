package cli_test

import (
	"strings"
	"testing"
)

// On a database pgbus migrate never ran on, the commands that need no DDL
// fail with a message to run it, exit 1, and create nothing, even for a
// role that could have migrated.
func TestCommandsOnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, args := range [][]string{
		{"dlq", "list"},
		{"dlq", "summary"},
		{"dlq", "show", "1"},
		{"dlq", "retry", "1"},
		{"queues"},
		{"audit"},
		{"send", "orders", "{}"},
		{"queue", "pause", "orders"},
		{"serve", "--read-only"},
	} {
		msg := d.fails(t, 1, args...)
		if !strings.Contains(msg, "the database has no pgbus schema") || !strings.Contains(msg, "run pgbus migrate") {
			t.Errorf("pgbus %s: stderr does not say to run pgbus migrate:\n%s", strings.Join(args, " "), msg)
		}
	}
	if n := d.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('pgbus', 'pgmq')`); n != 0 {
		t.Fatalf("the commands created %d of the schemas pgbus and pgmq", n)
	}
	d.ok(t, "migrate")
	if out := d.ok(t, "dlq", "list"); !strings.Contains(out, "no dead messages") {
		t.Errorf("dlq list after migrate: %q", out)
	}
}
