package store_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/schema"
	"github.com/pgbus/pgbus/store"
)

// A queue stored with max_retries 0 (by an older pgbus, or by hand)
// dead-lettered every message unrun; the migration gives it one run, and
// the table then refuses 0 as every front end does.
func TestMigrationGivesAQueueOfNoRunsOne(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	version := 0
	for _, m := range all {
		if m.Name == "max_retries_at_least_one" {
			version = m.Version
		}
	}
	if version == 0 {
		t.Fatal("no migration max_retries_at_least_one")
	}
	url, _ := databaseAtVersion(t, version-1)
	conn := connect(t, url, "")
	if _, err := conn.Exec(ctx, `INSERT INTO pgbus.queues (queue_name, max_retries) VALUES ('zero', 0), ('three', 3)`); err != nil {
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
	got := map[string]int{}
	rows, err := conn.Query(ctx, `SELECT queue_name, max_retries FROM pgbus.queues`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q string
		var n int
		if err := rows.Scan(&q, &n); err != nil {
			t.Fatal(err)
		}
		got[q] = n
	}
	if rows.Err() != nil || got["zero"] != 1 || got["three"] != 3 {
		t.Fatalf("max_retries after the migration: %v (%v); want zero's 1 and three's 3 kept", got, rows.Err())
	}
	_, err = conn.Exec(ctx, `UPDATE pgbus.queues SET max_retries = 0 WHERE queue_name = 'three'`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
		t.Fatalf("max_retries 0 stored after the migration: %v; want a check violation (23514)", err)
	}
}
