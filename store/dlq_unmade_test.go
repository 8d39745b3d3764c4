package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

// The migration that marks the queues registered without a DLQ counts a
// queue listed before it as having had one when its DLQ, its archive or
// its row of pgmq.meta is there; a queue with none of them (another PGMQ
// client's, registered without a DLQ) as never having had one.
func TestMigrationNotesTheDLQsMade(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	version := 0
	for _, m := range all {
		if m.Name == "queue_dlq_unmade" {
			version = m.Version
		}
	}
	if version == 0 {
		t.Fatal("no migration queue_dlq_unmade")
	}
	url, _ := databaseAtVersion(t, version-1)
	conn := connect(t, url, "")
	if _, err := conn.Exec(ctx, `
		INSERT INTO pgbus.queues (queue_name) VALUES ('kept'), ('archived'), ('listed'), ('never');
		CREATE TABLE pgmq.q_kept_dlq (x int);
		CREATE TABLE pgmq.a_archived_dlq (x int);
		INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('listed_dlq', false, false)`); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT queue_name, NOT dlq_unmade FROM pgbus.queues`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q string
		var made bool
		if err := rows.Scan(&q, &made); err != nil {
			t.Fatal(err)
		}
		got[q] = made
	}
	if rows.Err() != nil || len(got) != 4 || !got["kept"] || !got["archived"] || !got["listed"] || got["never"] {
		t.Fatalf("DLQs made after the migration: %v (%v); want it made for kept, archived and listed, not never", got, rows.Err())
	}
}

// A role that may create a queue's DLQ but not update pgbus.queues still
// makes it (a worker starting on a queue another PGMQ client made); only
// the record that it was made is left out. A queue registered with its
// DLQ there counts as having one.
func TestCreateDLQByARoleThatMayNotUpdateQueues(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	for _, q := range []string{"foreign", "whole"} {
		if err := owner.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Exec(t, url, `DELETE FROM pgbus.queues`)
	pgtest.DropOutside(t, owner, "foreign_dlq")
	for _, q := range []string{"foreign", "whole"} {
		if err := owner.RegisterQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	made := func(q string) bool {
		return pgtest.Int(t, owner, `SELECT count(*) FROM pgbus.queues WHERE NOT dlq_unmade AND queue_name = '`+q+`'`) == 1
	}
	if made("foreign") || !made("whole") {
		t.Fatalf("DLQs made once registered: foreign %v, whole %v; want only whole's, whose DLQ is there", made("foreign"), made("whole"))
	}
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE, CREATE ON SCHEMA pgmq TO "+role)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "REVOKE UPDATE ON pgbus.queues FROM "+role)
	if err := pgtest.OpenStore(t, roleURL).CreateDLQ(ctx, "foreign"); err != nil {
		t.Fatalf("the DLQ made by a role that may not update pgbus.queues: %v", err)
	}
	if ok, err := owner.QueueExists(ctx, "foreign_dlq"); err != nil || !ok || made("foreign") {
		t.Fatalf("after the role's create: DLQ there %v, %v, made %v; want it there and unrecorded", ok, err, made("foreign"))
	}
	if err := owner.CreateDLQ(ctx, "foreign"); err != nil || !made("foreign") {
		t.Fatalf("the owner's create: %v, made %v; want it recorded", err, made("foreign"))
	}
}
