package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An older pgbus rolled back to, on a database a newer one migrated: its
// migrate says so on stdout, with both versions, applies nothing and
// exits 0, so that a rollback's script goes on; its other commands work,
// warning on stderr, once even where workers check the schema again. Its
// migrate said "ready" with the newer version as though it were its own.
func TestMigrateOnANewerSchemaSaysToUpgrade(t *testing.T) {
	d := newDB(t)
	d.ok(t, "migrate")
	d.ok(t, "queue", "create", "orders")
	n := migrationCount(t)
	pgtest.Exec(t, d.url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus')`, n+1))

	out := d.ok(t, "migrate")
	want := fmt.Sprintf("schema version %d, migrated by a newer pgbus (this pgbus has versions up to %d): nothing applied or repaired; "+
		"this pgbus works on the newer schema, but upgrade it", n+1, n)
	if !strings.Contains(out, want) {
		t.Fatalf("migrate on a newer schema printed %q; want %q", out, want)
	}
	if rows := d.count(t, `SELECT count(*) FROM pgbus.schema_migrations`); rows != n+1 {
		t.Fatalf("pgbus.schema_migrations has %d rows after migrate, want %d", rows, n+1)
	}
	r := pgbus(t, d.env, "dlq", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "a newer pgbus migrated this database") || !strings.Contains(r.stdout, "no dead messages") {
		t.Fatalf("dlq list on a newer schema: exit %d\nstdout: %s\nstderr: %s\nwant it listed, with a warning", r.code, r.stdout, r.stderr)
	}
	// A worker process checks the schema on start, then runs its workers,
	// which check it again: it warns once.
	r = pgbus(t, d.env, "work", "--queue", "orders", "--handler", "demo", "--until-idle")
	if n := strings.Count(r.stderr, "a newer pgbus migrated this database"); r.code != 0 || n != 1 {
		t.Fatalf("work on a newer schema: exit %d, warned %d times\nstderr: %s\nwant it to work, warning once", r.code, n, r.stderr)
	}

	// A newer record lacking this pgbus's migrations: refused, saying to
	// upgrade rather than to migrate.
	pgtest.Exec(t, d.url, fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version <= %d`, n))
	for _, args := range [][]string{{"migrate"}, {"dlq", "list"}} {
		msg := d.fails(t, 1, args...)
		if !strings.Contains(msg, "migrated by a newer pgbus") || !strings.Contains(msg, "upgrade this pgbus") || strings.Contains(msg, "run pgbus migrate") {
			t.Errorf("pgbus %s on a newer schema it cannot read: %s; want it to say to upgrade, not to migrate", strings.Join(args, " "), msg)
		}
	}
	if rows := d.count(t, `SELECT count(*) FROM pgbus.schema_migrations`); rows != 1 {
		t.Fatalf("pgbus.schema_migrations has %d rows after migrate, want the newer pgbus's 1", rows)
	}
}

// pgbus health of an older pgbus, on a database a newer one migrated,
// lists the NOTICE reason schema_newer with both versions and to upgrade,
// the verdict left OK, as does its table; on a database this pgbus
// migrated it lists none. It said OK and nothing else.
func TestHealthOnANewerSchemaSaysToUpgrade(t *testing.T) {
	d := newDB(t)
	d.ok(t, "migrate")
	var h ops.Health
	d.json(t, &h, "health")
	if h.Status != ops.HealthOK || len(h.Reasons) != 0 {
		t.Fatalf("health of a database this pgbus migrated: %+v; want OK with no reason", h)
	}
	n := migrationCount(t)
	pgtest.Exec(t, d.url, fmt.Sprintf(`INSERT INTO pgbus.schema_migrations (version, name) VALUES (%d, 'of_a_newer_pgbus')`, n+1))

	d.json(t, &h, "health")
	want := fmt.Sprintf("a newer pgbus migrated this database to schema version %d; this pgbus has versions up to %d", n+1, n)
	if h.Status != ops.HealthOK || len(h.Reasons) != 1 || h.Reasons[0].Status != ops.HealthNotice || h.Reasons[0].Code != "schema_newer" ||
		!strings.Contains(h.Reasons[0].Message, want) || !strings.Contains(h.Reasons[0].Message, "upgrade this pgbus") {
		t.Fatalf("health --json on a newer schema: %+v; want OK with the NOTICE schema_newer saying %q and to upgrade", h, want)
	}
	if out := d.ok(t, "health"); !strings.Contains(out, "OK: 0 queues") || !strings.Contains(out, "NOTICE schema_newer: "+want) {
		t.Fatalf("health on a newer schema printed:\n%s\nwant OK and the NOTICE schema_newer reason", out)
	}
}
