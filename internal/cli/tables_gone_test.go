package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A restore of a dump that left PGMQ's tables out (PGMQ installed as an
// extension, whose member tables pg_dump leaves out, pgmq.meta's rows
// kept) leaves queues in pgbus's settings without tables: pgbus migrate
// warns of each, naming it and the commands that end it, and lists them
// with --json; pgbus health says DEGRADED with the same steps, which,
// followed, end the warning.
func TestMigrateAndHealthNameQueuesWhoseTablesAreGone(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders", "--max-retries", "9")
	d.ok(t, "queue", "create", "emails")
	d.ok(t, "queue", "create", "intact")
	for _, table := range []string{"q_orders", "a_orders", "q_orders_dlq", "a_orders_dlq", "q_emails", "a_emails", "q_emails_dlq", "a_emails_dlq"} {
		pgtest.Exec(t, d.url, `DROP TABLE pgmq.`+table)
	}

	r := pgbus(t, d.env, "migrate")
	if r.code != 0 || !strings.Contains(r.stdout, "pgbus: ready:") {
		t.Fatalf("migrate: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"pgmq.q_orders, pgmq.q_orders_dlq", "pgbus queue create orders", "pgbus queue drop orders --yes", "pgmq.q_emails", "pgbus queue create emails"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("migrate with the tables of orders and emails gone: stderr\n%s\nwant it to say %q", r.stderr, want)
		}
	}
	if strings.Contains(r.stderr, "intact") {
		t.Errorf("migrate: stderr\n%s\nnames intact, whose tables are there", r.stderr)
	}
	var st struct {
		Gone []string `json:"queues_without_tables"`
	}
	if err := json.Unmarshal([]byte(d.ok(t, "migrate", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if strings.Join(st.Gone, ",") != "emails,orders" {
		t.Errorf("migrate --json: queues_without_tables %q; want emails and orders", st.Gone)
	}

	out := d.ok(t, "health")
	for _, want := range []string{"DEGRADED queue_tables_missing: queue \"orders\"", "  next: pgbus queue create orders\n", "  next: pgbus queue drop orders --yes\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("health:\n%s\nwant %q", out, want)
		}
	}
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "queue", "drop", "emails", "--yes")
	if out := d.ok(t, "queues"); !strings.Contains(out, "orders") || strings.Contains(out, "emails") {
		t.Errorf("queues once orders is made again and emails dropped:\n%s", out)
	}
	if r := pgbus(t, d.env, "migrate"); r.code != 0 || strings.Contains(r.stderr, "orders") || strings.Contains(r.stderr, "emails") {
		t.Errorf("migrate once both are dealt with: exit %d\nstderr: %s\nwant no warning", r.code, r.stderr)
	}
	if out := d.ok(t, "health"); strings.Contains(out, "queue_tables_missing") {
		t.Errorf("health once both are dealt with:\n%s", out)
	}
}
